//! What kind of failure an error is, decided by its type: `#[derive(Classify)]` on the
//! user's error enums, `std::io::Error` by its kind, and a search of the source chain for
//! errors that arrive boxed (`Box<dyn Error>`, `anyhow::Error`). The runtime reads the class;
//! it never parses messages.

use std::{
    error::Error,
    fmt, io,
    sync::{OnceLock, RwLock},
    time::Duration,
};

/// How the pipeline treats a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The caller sent something wrong: the model reads the message and the hint and
    /// fixes its call.
    InvalidInput,
    /// A passing failure upstream (a network blip, a timeout, a lock): retried under the
    /// tool's policy, with the failing resource reconnected.
    Transient,
    /// A bug or an unexpected state: masked for the model (a correlation id), logged.
    Internal,
    /// The server cannot go on (corrupt configuration, lost credentials): the call is
    /// answered, the event logged, and the process exits with code 70.
    Fatal,
    /// Not a failure: advice for the model, returned with `isError: false`.
    Warning,
}

impl ErrorClass {
    /// The stable snake-case name, as logs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Transient => "transient",
            Self::Internal => "internal",
            Self::Fatal => "fatal",
            Self::Warning => "warning",
        }
    }
}

/// A well-known kind of failure with stable wording for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The caller is not authenticated.
    Unauthorized,
    /// The caller may not do this.
    Forbidden,
    /// What the call names does not exist.
    NotFound,
    /// The call conflicts with the current state.
    Conflict,
    /// Too many calls; retry later.
    RateLimited,
}

impl ErrorCode {
    /// The stable snake-case name, as logs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::RateLimited => "rate_limited",
        }
    }

    /// The words the model's message starts with.
    pub fn label(self) -> &'static str {
        match self {
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "Not found",
            Self::Conflict => "Conflict",
            Self::RateLimited => "Rate limited",
        }
    }
}

/// The classification of one error value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The class.
    pub class: ErrorClass,
    /// A well-known code, if any.
    pub code: Option<ErrorCode>,
    /// A hint for the model on what to do instead.
    pub hint: Option<&'static str>,
    /// How long to wait before trying again (for `rate_limited` and transient errors).
    pub retry_after: Option<Duration>,
}

impl Classification {
    /// A classification with only a class.
    pub const fn of(class: ErrorClass) -> Self {
        Self {
            class,
            code: None,
            hint: None,
            retry_after: None,
        }
    }

    /// The default for an error nobody classified.
    pub const INTERNAL: Self = Self::of(ErrorClass::Internal);
}

/// An error type that knows its class. Derive it with `#[derive(Classify)]`.
///
/// ```
/// use fusion_runtime::{Classify, failure::ErrorClass};
///
/// #[derive(Debug, thiserror::Error, Classify)]
/// enum DbError {
///     #[error("the database connection dropped")]
///     #[transient]
///     ConnectionLost,
///     #[error("no user with id {0}")]
///     #[invalid_input(code = not_found, hint = "list the users to find a valid id")]
///     NoSuchUser(u64),
///     #[error("the schema version is unknown")]
///     #[fatal]
///     UnknownSchema,
///     #[error(transparent)]
///     Io(#[from] std::io::Error),
/// }
///
/// assert_eq!(DbError::ConnectionLost.classification().class, ErrorClass::Transient);
/// let timed_out = DbError::Io(std::io::ErrorKind::TimedOut.into());
/// assert_eq!(timed_out.classification().class, ErrorClass::Transient);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say what kind of failure it is",
    note = "add `#[derive(Classify)]` to the error type and mark its variants `#[transient]`, `#[invalid_input]`, `#[internal]` or `#[fatal]`"
)]
pub trait Classify {
    /// The class, code, hint and retry delay of this value.
    fn classification(&self) -> Classification;
}

impl Classify for io::Error {
    /// Connection and timeout kinds are transient; every other kind is internal.
    fn classification(&self) -> Classification {
        match self.kind() {
            io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::Interrupted => Classification::of(ErrorClass::Transient),
            _ => Classification::INTERNAL,
        }
    }
}

type Finder = fn(&(dyn Error + 'static)) -> Option<Classification>;

fn registry() -> &'static RwLock<Vec<Finder>> {
    static REGISTRY: OnceLock<RwLock<Vec<Finder>>> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(Vec::new()))
}

/// Makes errors of type `E` recognisable inside boxed errors (`Box<dyn Error>`,
/// `anyhow::Error`), where their type is no longer known statically. Errors returned as
/// themselves need no registration. [`ServerBuilder::classify`](crate::ServerBuilder::classify)
/// calls this.
pub fn register<E: Classify + Error + 'static>() {
    fn find<E: Classify + Error + 'static>(
        error: &(dyn Error + 'static),
    ) -> Option<Classification> {
        error.downcast_ref::<E>().map(Classify::classification)
    }
    let finder: Finder = find::<E>;
    if let Ok(mut finders) = registry().write()
        && !finders
            .iter()
            .any(|known| std::ptr::fn_addr_eq(*known, finder))
    {
        finders.push(finder);
    }
}

/// The classification of a dynamically typed error: the first error in its source chain
/// (itself first) that is a registered type or an `io::Error`; internal otherwise.
pub fn classify_dyn(error: &(dyn Error + 'static)) -> Classification {
    let finders = registry()
        .read()
        .map(|list| list.clone())
        .unwrap_or_default();
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = finders.iter().find_map(|find| find(error)) {
            return found;
        }
        if let Some(io) = error.downcast_ref::<io::Error>() {
            let found = io.classification();
            if found.class != ErrorClass::Internal {
                return found;
            }
        }
        current = error.source();
    }
    Classification::INTERNAL
}

/// A `Display` for a duration in the words the model reads ("2 s", "250 ms").
pub(crate) struct Human(pub(crate) Duration);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        if millis >= 1000 && millis.is_multiple_of(1000) {
            write!(f, "{} s", millis / 1000)
        } else if millis >= 1000 {
            write!(f, "{:.1} s", self.0.as_secs_f64())
        } else {
            write!(f, "{millis} ms")
        }
    }
}

/// Compile-time selection of how a source field is classified inside a derived
/// `Classify`: its own classification when it has one, the chain search when it is an
/// error, internal otherwise.
#[doc(hidden)]
pub mod ladder {
    use std::error::Error;

    use super::{Classification, Classify, classify_dyn};
    use crate::autoref::Probe;

    /// A source that classifies itself.
    pub trait SourceClassify {
        /// Its classification.
        type Source: ?Sized;
        /// Classifies the source.
        fn source_classification(self, source: &Self::Source) -> Classification;
    }

    impl<T: Classify> SourceClassify for &&Probe<T> {
        type Source = T;
        fn source_classification(self, source: &T) -> Classification {
            source.classification()
        }
    }

    /// A source that is some other error: search its chain.
    pub trait SourceDyn {
        /// The source's type.
        type Source: ?Sized;
        /// Classifies the source.
        fn source_classification(self, source: &Self::Source) -> Classification;
    }

    impl<T: Error + 'static> SourceDyn for &Probe<T> {
        type Source = T;
        fn source_classification(self, source: &T) -> Classification {
            classify_dyn(source)
        }
    }

    /// Anything else: internal.
    pub trait SourceOther {
        /// The source's type.
        type Source: ?Sized;
        /// Classifies the source.
        fn source_classification(self, source: &Self::Source) -> Classification;
    }

    impl<T> SourceOther for Probe<T> {
        type Source = T;
        fn source_classification(self, _source: &T) -> Classification {
            Classification::INTERNAL
        }
    }
}

/// Classifies a source field of a derived `Classify` (used by the derive).
#[doc(hidden)]
#[macro_export]
macro_rules! __classify_source {
    ($source:expr) => {{
        #[allow(unused_imports)]
        use $crate::__private::classify_ladder::{
            SourceClassify as _, SourceDyn as _, SourceOther as _,
        };
        let source = $source;
        (&&&$crate::__private::ladder::Probe::of(source)).source_classification(source)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(io::Error);

    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("wrapped")
        }
    }

    impl Error for Wrapper {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn io_kinds_are_transient_through_a_chain() {
        let boxed: Box<dyn Error + Send + Sync> =
            Box::new(Wrapper(io::ErrorKind::ConnectionReset.into()));
        assert_eq!(classify_dyn(boxed.as_ref()).class, ErrorClass::Transient);
        let other: Box<dyn Error + Send + Sync> = Box::new(Wrapper(io::ErrorKind::NotFound.into()));
        assert_eq!(classify_dyn(other.as_ref()).class, ErrorClass::Internal);
    }

    #[test]
    fn durations_read_as_words() {
        assert_eq!(Human(Duration::from_millis(2500)).to_string(), "2.5 s");
    }
}
