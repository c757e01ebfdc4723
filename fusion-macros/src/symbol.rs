//! The attribute keys the macros accept, named once.

/// `#[mcp_tool(name = "...")]`
pub(crate) const NAME: &str = "name";
/// `#[mcp_tool(description = "...")]`
pub(crate) const DESCRIPTION: &str = "description";
/// `#[mcp_tool(title = "...")]`
pub(crate) const TITLE: &str = "title";
/// `#[mcp_tool(read_only)]`, `read_only = false`
pub(crate) const READ_ONLY: &str = "read_only";
/// `#[mcp_tool(destructive)]`
pub(crate) const DESTRUCTIVE: &str = "destructive";
/// `#[mcp_tool(idempotent)]`
pub(crate) const IDEMPOTENT: &str = "idempotent";
/// `#[mcp_tool(open_world)]`
pub(crate) const OPEN_WORLD: &str = "open_world";
/// `#[mcp_tool(crate = "path")]`
pub(crate) const CRATE: &str = "crate";

/// Every key of `#[mcp_tool(...)]`, in the order the error message lists them.
pub(crate) const TOOL_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    CRATE,
];

/// `#[ctx]` on a parameter: the per-call context.
pub(crate) const CTX: &str = "ctx";
/// `#[serde(...)]` on a parameter: passed to the argument struct's field.
pub(crate) const SERDE: &str = "serde";
/// `#[schemars(...)]` on a parameter: passed to the argument struct's field.
pub(crate) const SCHEMARS: &str = "schemars";
/// `#[doc = "..."]` (a `///` comment) on a parameter: its description.
pub(crate) const DOC: &str = "doc";
