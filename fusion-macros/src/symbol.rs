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
/// `#[mcp_tool(timeout = "100ms")]`
pub(crate) const TIMEOUT: &str = "timeout";
/// `#[mcp_tool(heartbeat = "5s")]`
pub(crate) const HEARTBEAT: &str = "heartbeat";
/// `#[mcp_tool(task_after = "20s")]`
pub(crate) const TASK_AFTER: &str = "task_after";
/// `#[mcp_tool(retry(attempts = 3, backoff = "10ms", max_backoff = "1s"))]`
pub(crate) const RETRY: &str = "retry";
/// `retry(attempts = N)`
pub(crate) const ATTEMPTS: &str = "attempts";
/// `retry(backoff = "10ms")`
pub(crate) const BACKOFF: &str = "backoff";
/// `retry(max_backoff = "1s")`
pub(crate) const MAX_BACKOFF: &str = "max_backoff";
/// `#[mcp_tool(circuit(failures = 5, window = "30s", cooldown = "10s"))]`
pub(crate) const CIRCUIT: &str = "circuit";
/// `circuit(failures = N)`
pub(crate) const FAILURES: &str = "failures";
/// `circuit(window = "30s")`
pub(crate) const WINDOW: &str = "window";
/// `circuit(cooldown = "10s")`
pub(crate) const COOLDOWN: &str = "cooldown";
/// `#[mcp_tool(reconnect = field)]`
pub(crate) const RECONNECT: &str = "reconnect";
/// `#[mcp_tool(group = "db_user")]`
pub(crate) const GROUP: &str = "group";
/// `#[mcp_tool(action = "find_many")]`
pub(crate) const ACTION: &str = "action";
/// `#[mcp_tool(presenter = path)]`
pub(crate) const PRESENTER: &str = "presenter";
/// `#[mcp_tool(idempotency_key = "request_id")]`
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency_key";
/// `#[mcp_tool(serialize = "account")]`
pub(crate) const SERIALIZE: &str = "serialize";
/// `#[mcp_tool(scopes = ["db:write"])]`
pub(crate) const SCOPES: &str = "scopes";
/// `#[mcp_tool(tags = ["beta"])]`
pub(crate) const TAGS: &str = "tags";
/// `#[mcp_tool(trace_arguments)]`
pub(crate) const TRACE_ARGUMENTS: &str = "trace_arguments";
/// `#[mcp_tool(max_output = "64KiB")]`
pub(crate) const MAX_OUTPUT: &str = "max_output";
/// `#[mcp_tool(cache = "30s")]`
pub(crate) const CACHE: &str = "cache";
/// `#[mcp_tool(cache_scope = "public")]`
pub(crate) const CACHE_SCOPE: &str = "cache_scope";
/// `#[mcp_tool(stale_if_error = "10m")]`
pub(crate) const STALE_IF_ERROR: &str = "stale_if_error";
/// `#[mcp_tool(invalidates = ["quote"])]`
pub(crate) const INVALIDATES: &str = "invalidates";

/// Every key of `#[mcp_tool(...)]`, in the order the error message lists them.
pub(crate) const TOOL_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TITLE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    TIMEOUT,
    HEARTBEAT,
    TASK_AFTER,
    RETRY,
    CIRCUIT,
    RECONNECT,
    GROUP,
    ACTION,
    PRESENTER,
    IDEMPOTENCY_KEY,
    SERIALIZE,
    SCOPES,
    TAGS,
    TRACE_ARGUMENTS,
    MAX_OUTPUT,
    CACHE,
    CACHE_SCOPE,
    STALE_IF_ERROR,
    INVALIDATES,
    CRATE,
];

/// `#[redact]` on a field of an `#[mcp_type]`.
pub(crate) const REDACT: &str = "redact";

/// `#[ctx]` on a parameter: the per-call context.
pub(crate) const CTX: &str = "ctx";
/// `#[call]` on a parameter: the request being served (`&fusion_runtime::Call`).
pub(crate) const CALL: &str = "call";
/// `#[serde(...)]` on a parameter: passed to the argument struct's field.
pub(crate) const SERDE: &str = "serde";
/// `#[schemars(...)]` on a parameter: passed to the argument struct's field.
pub(crate) const SCHEMARS: &str = "schemars";
/// `#[doc = "..."]` (a `///` comment) on a parameter: its description.
pub(crate) const DOC: &str = "doc";

/// `#[arg(...)]` on a parameter or field: its constraints.
pub(crate) const ARG: &str = "arg";
/// The attribute that points the prelude's derives at fusion's re-exports.
pub(crate) const MCP_TYPE: &str = "mcp_type";
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
/// `secret`: hidden in logs and messages
pub(crate) const SECRET: &str = "secret";

/// `items(..)`: constraints on each item of a list
pub(crate) const ITEMS: &str = "items";
/// The keys about a parameter as a whole, which `items(..)` refuses.
pub(crate) const VALUE_ONLY_KEYS: &[&str] = &[DEFAULT, VALIDATE, DEPRECATED, SECRET, ITEMS];
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
    SECRET,
    ITEMS,
];

/// The formats `format = "..."` accepts (the runtime checks exactly these).
pub(crate) const FORMATS: &[&str] = &["email", "uri", "uuid", "date", "date-time", "ipv4", "ipv6"];

/// `#[transient]`: a passing failure, retried.
pub(crate) const TRANSIENT: &str = "transient";
/// `#[invalid_input]`: the caller's mistake.
pub(crate) const INVALID_INPUT: &str = "invalid_input";
/// `#[internal]`: a bug, masked (the default).
pub(crate) const INTERNAL: &str = "internal";
/// `#[fatal]`: the process ends.
pub(crate) const FATAL: &str = "fatal";
/// `#[warning]`: advice, not a failure.
pub(crate) const WARNING: &str = "warning";
/// The class attributes of `#[derive(Classify)]`.
pub(crate) const CLASSES: &[&str] = &[TRANSIENT, INVALID_INPUT, INTERNAL, FATAL, WARNING];
/// `#[classify(crate = "path")]`
pub(crate) const CLASSIFY: &str = "classify";
/// `code = not_found`
pub(crate) const CODE: &str = "code";
/// `hint = "..."`
pub(crate) const HINT: &str = "hint";
/// `retry_after = "2s"`
pub(crate) const RETRY_AFTER: &str = "retry_after";
/// The codes a class attribute may carry.
pub(crate) const CODES: &[&str] = &[
    "unauthorized",
    "forbidden",
    "not_found",
    "conflict",
    "rate_limited",
];
