//! Redacted output fields: `#[redact]` on a field of an `#[mcp_type]` struct or enum.
//!
//! A redacted field keeps its real value in the program: the tool's presenter, and any code
//! of the user's that serializes the type, see it. When the server serializes a result
//! (`structuredContent` and its text copy, and so everything made from them: the tester's
//! data, a replayed idempotent answer, a task's stored result), the field is written as its
//! [`Redact`] mask instead: `"[redacted]"` ([`REDACTED`], as for secret arguments) for text,
//! `null` for an `Option`. The call log never holds a result, so the value is in none of the
//! server's output.
//!
//! The mask keeps the tool's `outputSchema` valid: `null` is what an `Option`'s schema
//! allows anyway, and a redacted text field's schema loses the keywords a mask could break
//! (`format`, `pattern`, `minLength`, `maxLength`).
//!
//! ```
//! use fusion_runtime::{prelude::*, testing::Tester};
//!
//! #[mcp_type]
//! #[derive(Serialize, JsonSchema)]
//! struct Customer {
//!     name: String,
//!     /// Personal data: never shown to the model.
//!     #[redact]
//!     email: String,
//!     #[redact]
//!     phone: Option<String>,
//! }
//!
//! /// Look a customer up.
//! #[mcp_tool(read_only)]
//! async fn customer() -> Customer {
//!     Customer { name: "Ada".into(), email: "ada@example.com".into(), phone: Some("555".into()) }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tester = Tester::new(Server::builder("shop", "1").tool(customer).build());
//! let result = tester.call("customer", serde_json::json!({})).await;
//! assert_eq!(
//!     result.data,
//!     serde_json::json!({ "name": "Ada", "email": "[redacted]", "phone": null })
//! );
//! # });
//! ```
//!
//! A field whose type cannot hold a mask (a number, say) does not compile: make it an
//! `Option`, or implement [`Redact`] for the type.

use std::{borrow::Cow, cell::Cell};

use serde::{Serialize, Serializer};

use crate::limits::REDACTED;

/// A type that a `#[redact]` field may have: it says what the field becomes in a result.
///
/// Implemented for the text types (the mask is [`REDACTED`]) and for `Option<T>` of any
/// serializable `T` (the mask is `null`). Implement it for a type of your own whose
/// serialized form can hold a mask, a newtype over a `String` for example:
///
/// ```
/// use fusion_runtime::{limits::REDACTED, tool::Redact};
///
/// #[derive(serde::Serialize)]
/// struct Email(String);
///
/// impl Redact for Email {
///     fn serialize_redacted<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
///         serializer.serialize_str(REDACTED)
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `#[redact]` field of type `{Self}` cannot hold the mask",
    label = "the mask is `\"[redacted]\"` for text and `null` for an `Option`; `{Self}` has room for neither",
    note = "make the field an `Option<..>` (redacted to `null`) or a text type, or implement `fusion_runtime::tool::Redact` for `{Self}`"
)]
pub trait Redact {
    /// Writes the mask in place of the value.
    ///
    /// # Errors
    /// The serializer's own errors.
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl Redact for String {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl Redact for str {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl Redact for &str {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl Redact for Box<str> {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl Redact for Cow<'_, str> {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<T: Serialize> Redact for Option<T> {
    fn serialize_redacted<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_none()
    }
}

thread_local! {
    /// Whether the serialization running on this thread is a result's: set by
    /// [`Redacting::begin`]. Serialization is synchronous, so a flag of the thread's is the
    /// flag of that serialization.
    static REDACTING: Cell<bool> = const { Cell::new(false) };
}

/// While alive, `#[redact]` fields serialized on this thread write their mask. Restores
/// the previous state when dropped, a panic inside a `Serialize` impl included.
pub(crate) struct Redacting {
    before: bool,
}

impl Redacting {
    pub(crate) fn begin() -> Self {
        Self {
            before: REDACTING.replace(true),
        }
    }
}

impl Drop for Redacting {
    fn drop(&mut self) {
        REDACTING.set(self.before);
    }
}

/// Serializes a `#[redact]` field: its mask inside a result's serialization, its value
/// anywhere else (what `#[mcp_type]` points the field's `serialize_with` at).
#[doc(hidden)]
pub fn serialize<T, S>(value: &T, serializer: S) -> Result<S::Ok, S::Error>
where
    T: Redact + Serialize + ?Sized,
    S: Serializer,
{
    if REDACTING.get() {
        value.serialize_redacted(serializer)
    } else {
        value.serialize(serializer)
    }
}

/// The schema of a `#[redact]` field, made to accept the mask: the keywords that constrain
/// a string's content go (an `Option`'s schema accepts `null` already).
#[doc(hidden)]
pub fn schema(schema: &mut schemars::Schema) {
    for keyword in ["format", "pattern", "minLength", "maxLength"] {
        schema.remove(keyword);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Card {
        #[serde(serialize_with = "serialize")]
        number: String,
        #[serde(serialize_with = "serialize")]
        holder: Option<u32>,
    }

    fn card() -> Card {
        Card {
            number: "4111".into(),
            holder: Some(7),
        }
    }

    #[test]
    fn the_mask_is_written_only_while_redacting() {
        let plain = serde_json::to_value(card()).expect("serializes");
        assert_eq!(plain, serde_json::json!({"number": "4111", "holder": 7}));
        let masked = {
            let _redacting = Redacting::begin();
            serde_json::to_value(card()).expect("serializes")
        };
        assert_eq!(
            masked,
            serde_json::json!({"number": REDACTED, "holder": null})
        );
        assert_eq!(serde_json::to_value(card()).expect("serializes"), plain);
    }

    #[test]
    fn a_panic_while_redacting_restores_the_flag() {
        let caught = std::panic::catch_unwind(|| {
            let _redacting = Redacting::begin();
            panic!("a Serialize impl panicked");
        });
        assert!(caught.is_err());
        assert!(!REDACTING.get());
    }

    #[test]
    fn nested_redacting_restores_the_outer_state() {
        let outer = Redacting::begin();
        drop(Redacting::begin());
        assert!(REDACTING.get());
        drop(outer);
        assert!(!REDACTING.get());
    }

    #[test]
    fn the_schema_of_a_redacted_text_accepts_the_mask() {
        let mut schema = schemars::json_schema!({
            "type": "string", "format": "email", "pattern": "^.+@.+$", "minLength": 3, "maxLength": 5,
            "description": "kept"
        });
        super::schema(&mut schema);
        assert_eq!(
            schema.as_value(),
            &serde_json::json!({"type": "string", "description": "kept"})
        );
    }
}
