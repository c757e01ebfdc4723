//! The mistakes found while a server is put together ([`BuildError`]), what it builds but
//! probably should not ([`BuildWarning`]), and the reasons it refuses to start
//! ([`StartupError`]).

/// Something a server builds and serves, but probably not as meant. Each is logged when
/// the server is built, written to stderr when it starts serving, and listed by
/// [`Server::warnings`](crate::Server::warnings).
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildWarning {
    /// A group listed as one tool has read-only actions and actions that may destroy. The
    /// listed tool carries one set of hints, and MCP's rule makes it destructive for every
    /// action: a client that confirms destructive calls asks before each read as well.
    /// [`ServerBuilder::allow_mixed_hints`](crate::ServerBuilder::allow_mixed_hints)
    /// accepts it for one group.
    #[error(
        "group `{group}` lists read-only actions ({}) with actions that may destroy ({}) as one tool, which clients see as destructive for every action: a client that confirms destructive calls will ask before each read too. Put the reads in a group of their own, serve groups flat with `.exposure(Exposure::Flat)`, mark a write that only adds `destructive = false`, or accept it with `.allow_mixed_hints(\"{group}\")`",
        quoted(read_only),
        quoted(destructive)
    )]
    MixedGroupHints {
        /// The group.
        group: String,
        /// Its actions marked `read_only`.
        read_only: Vec<String>,
        /// Its actions that clients count as destructive: marked `destructive`, or neither
        /// `read_only` nor `destructive = false` (MCP's default for a tool that writes).
        destructive: Vec<String>,
    },
}

/// `["a", "b"]` as "`a`, `b`".
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A mistake in how a server was put together, found by
/// [`ServerBuilder::try_build`](crate::ServerBuilder::try_build).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// An MCP Apps view that cannot be served
    /// ([`ServerBuilder::app_view`](crate::ServerBuilder::app_view)).
    #[error("tool `{tool}`: the app view `{uri}` cannot be served: {reason}")]
    InvalidAppView {
        /// The tool it was linked to.
        tool: String,
        /// The view's URI.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// Two tools share a name; the second would silently replace the first.
    #[error("two tools are named `{0}`; rename one with `#[mcp_tool(name = \"...\")]`")]
    DuplicateTool(String),
    /// Tool search is on ([`ServerBuilder::tool_search`](crate::ServerBuilder::tool_search))
    /// and a tool of the server's has the name of one of its two listed tools.
    #[error(
        "tool search lists a tool named `{0}`, and a tool of this server has that name; rename it with `#[mcp_tool(name = \"...\")]`"
    )]
    ToolSearchNameTaken(String),
    /// A parameter's `default` breaks its own constraints (a default written as an
    /// expression can only be checked when the tool is registered).
    #[error("tool `{tool}`: a default value breaks its own constraints: {details}")]
    InvalidDefault {
        /// The tool.
        tool: String,
        /// The problems, one per line.
        details: String,
    },
    /// Two actions of one group share a name.
    #[error(
        "group `{group}` has two actions named `{action}`; rename one with `#[mcp_tool(action = \"...\")]`"
    )]
    DuplicateAction {
        /// The group.
        group: String,
        /// The action.
        action: String,
    },
    /// Two actions of one group declare a parameter of the same name (or a type of the
    /// same name) differently: the grouped tool's schema cannot say both.
    #[error(
        "group `{group}`: actions `{first}` and `{second}` both declare {parameter}, with different types or constraints; declare it the same way in both, or rename it in one"
    )]
    ConflictingParameter {
        /// The group.
        group: String,
        /// What is declared twice, as the message names it: "`take`" for a parameter, "the
        /// type `Filter`" for a type both actions' schemas define.
        parameter: String,
        /// The action that declared it first.
        first: String,
        /// The action that declares it differently.
        second: String,
    },
    /// Middleware or a description names a tool or group that does not exist.
    #[error("`{0}` names no tool or group of this server; check the spelling or register it")]
    UnknownTarget(String),
    /// The per-call context comes from a setup step
    /// ([`ServerBuilder::context_from_setup`](crate::ServerBuilder::context_from_setup)),
    /// which only `start` and the `serve_*` methods run.
    #[error(
        "the context is made from a setup step (`.context_from_setup(..)`), which `build` and `try_build` do not run; build the server with `.start().await` or serve it with a `serve_*` method"
    )]
    ContextNeedsStart,
    /// Upstreams were mounted ([`ServerBuilder::upstream`](crate::ServerBuilder::upstream)),
    /// whose tools are listed only when the server starts.
    #[error(
        "upstream `{0}` is mounted, and an upstream's tools are had by connecting to it, which `build` and `try_build` do not do; build the server with `.start().await` or serve it with a `serve_*` method"
    )]
    UpstreamNeedsStart(String),
    /// `.context(..)` was called after tools were registered for the unit context.
    #[error(
        "`.context(..)` was called after {0} tool(s) were registered; call `.context(..)` first, right after `Server::builder(..)`"
    )]
    ContextAfterTools(usize),
    /// Two resources (or two resource templates) share a URI.
    #[error("two resources have the URI `{0}`; give each its own")]
    DuplicateResource(String),
    /// A resource template is not a URI template fusion can match.
    #[error("the resource template `{template}` is invalid: {problem}")]
    InvalidUriTemplate {
        /// The template.
        template: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Two prompts share a name.
    #[error("two prompts are named `{0}`; rename one")]
    DuplicatePrompt(String),
    /// `#[mcp_tool(invalidates = [..])]` names no cached tool of this server.
    #[error("tool `{tool}`: `invalidates` names `{target}`, {problem}")]
    UnknownInvalidation {
        /// The tool whose `invalidates` it is.
        tool: String,
        /// The name it lists.
        target: String,
        /// What is wrong: no such tool, or a tool without `cache`.
        problem: String,
    },
}

/// Why a server refused to start: printed to stderr, and the process exits with
/// [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG) (78) before serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// The server was put together wrongly.
    #[error("{}", describe_build_errors(.0))]
    Build(Vec<BuildError>),
    /// A required environment variable is missing or empty.
    #[error(
        "the environment variable `{0}` is required but not set; set it in the client's server configuration (`env`) or the shell"
    )]
    MissingEnv(String),
    /// A setup step failed.
    #[error("setup failed: {0}")]
    Setup(String),
    /// The built tool surface is not the one
    /// [`require_surface`](crate::ServerBuilder::require_surface) pinned.
    #[error("{message}")]
    SurfaceMismatch {
        /// The built surface's digest.
        built: String,
        /// The pinned digest.
        pinned: String,
        /// Both digests and, when a lockfile was pinned, each change from it, worst first.
        message: String,
    },
    /// The pin given to [`require_surface`](crate::ServerBuilder::require_surface) is
    /// neither a digest nor a lockfile.
    #[error("the surface pin cannot be read: {0}")]
    InvalidSurfacePin(String),
    /// The tool surface costs more tokens than
    /// [`token_budget`](crate::ServerBuilder::token_budget) allows.
    #[error(transparent)]
    OverTokenBudget(#[from] crate::contract::OverBudget),
    /// A mounted upstream ([`ServerBuilder::upstream`](crate::ServerBuilder::upstream))
    /// could not be reached, or did not list its tools, within its connect timeout.
    #[error("upstream `{prefix}` ({upstream}) cannot be mounted: {reason}")]
    Upstream {
        /// Its prefix.
        prefix: String,
        /// Its URL or program.
        upstream: String,
        /// What went wrong.
        reason: String,
    },
}

pub(crate) fn describe_build_errors(errors: &[BuildError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!("the server cannot be built:\n  - {}", lines.join("\n  - "))
}
