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

/// `#[arg(...)]` on a parameter or field: its constraints.
pub(crate) const ARG: &str = "arg";
/// `min = N`
pub(crate) const MIN: &str = "min";
/// `max = N`
pub(crate) const MAX: &str = "max";
/// `exclusive_min = N`
pub(crate) const EXCLUSIVE_MIN: &str = "exclusive_min";
/// `exclusive_max = N`
pub(crate) const EXCLUSIVE_MAX: &str = "exclusive_max";
/// `multiple_of = N`
pub(crate) const MULTIPLE_OF: &str = "multiple_of";
/// `length(min = N, max = N)`
pub(crate) const LENGTH: &str = "length";
/// `non_empty`
pub(crate) const NON_EMPTY: &str = "non_empty";
/// `pattern = "regex"`
pub(crate) const PATTERN: &str = "pattern";
/// `format = "email"`
pub(crate) const FORMAT: &str = "format";
/// `one_of = [..]`
pub(crate) const ONE_OF: &str = "one_of";
/// `unique`
pub(crate) const UNIQUE: &str = "unique";
/// `default = expr`
pub(crate) const DEFAULT: &str = "default";
/// `validate = path`
pub(crate) const VALIDATE: &str = "validate";
/// `deprecated`
pub(crate) const DEPRECATED: &str = "deprecated";

/// Every key of `#[arg(...)]`.
pub(crate) const ARG_KEYS: &[&str] = &[
    MIN,
    MAX,
    EXCLUSIVE_MIN,
    EXCLUSIVE_MAX,
    MULTIPLE_OF,
    LENGTH,
    NON_EMPTY,
    PATTERN,
    FORMAT,
    ONE_OF,
    UNIQUE,
    DEFAULT,
    VALIDATE,
    DEPRECATED,
];

/// The formats `format = "..."` accepts (the runtime checks exactly these).
pub(crate) const FORMATS: &[&str] = &["email", "uri", "uuid", "date", "date-time", "ipv4", "ipv6"];
