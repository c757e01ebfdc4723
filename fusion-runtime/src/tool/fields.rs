//! Arguments decoded field by field: what `#[mcp_tool]` generates for a tool whose
//! parameters carry no `#[serde]`, `#[schemars]` or `#[arg]` attributes (most tools).
//!
//! The derives of serde and schemars generate a visitor, a field enum and a schema function
//! for every argument struct, and rustc checks and compiles them once per tool: most of
//! what a tool costs to build (issue 32, item 6). Here the macro writes only constant data
//! (each field's name, its doc comment, and a pointer to the schema function of its type)
//! and a `decode` that takes each field by name. The generic code is per argument *type*
//! (`take::<String>`, `field_schema::<i64>`), which rustc compiles once for a crate's
//! tools, whatever their number.
//!
//! Both paths give the same schema and the same decoding:
//! - the schema is assembled with the very helpers schemars' derive calls (the tests below
//!   compare the two, field by field);
//! - a missing field is decoded as serde's derive decodes it (an `Option` is `None`, any
//!   other type an error), and an unknown one is refused, as `deny_unknown_fields` does.

use std::{borrow::Cow, collections::BTreeMap, marker::PhantomData};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{
    Deserializer,
    de::{self, DeserializeOwned, Visitor},
};
use serde_json::{Map, Value, value::RawValue};

use crate::{
    failure::issue::ArgIssue,
    tool::constraint::{self, Constraint},
    validate::{Input, NumberLiterals, Validator},
};

/// One parameter of a tool decoded field by field.
#[derive(Clone, Copy)]
pub struct ArgField {
    /// The argument's name.
    pub name: &'static str,
    /// Its doc comment, lines joined as schemars' derive joins them.
    pub doc: &'static str,
    /// The schema of its type ([`field_schema`]), and whether it may be left out.
    pub schema: fn(&mut SchemaGenerator) -> (Schema, bool),
    /// Its `#[arg(..)]` constraints, written into its schema after its docs, where
    /// schemars' derive applies a field's `transform`.
    pub constraints: &'static [Constraint],
}

/// The schema of a field of type `T`, and whether it may be left out (an `Option`), as
/// schemars' derive asks them.
pub fn field_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> (Schema, bool) {
    let optional = generator.contract().is_deserialize() && T::_schemars_private_is_option();
    (generator.subschema_for::<T>(), optional)
}

/// An argument struct that `#[mcp_tool]` decodes field by field.
pub trait FieldArgs: Sized + Send + 'static {
    /// The parameters, in the function's order.
    const FIELDS: &'static [ArgField];
    /// Their names, in the same order (what a refusal of an unknown field lists).
    const NAMES: &'static [&'static str];

    /// Takes each field out of `source`.
    fn decode(source: &mut ArgSource<'_>) -> Result<Self, serde_json::Error>;
}

/// Where [`FieldArgs::decode`] takes the fields from: the call's arguments, or JSON text
/// (integers beyond 64 bits, which a `Value` cannot hold).
pub struct ArgSource<'a> {
    fields: Fields<'a>,
    /// How many of the fields taken were present.
    found: usize,
}

enum Fields<'a> {
    Value(&'a Map<String, Value>),
    Text(BTreeMap<String, &'a RawValue>),
}

impl<'a> ArgSource<'a> {
    /// The fields of an arguments object (the validator has refused any other value).
    pub(crate) fn from_value(args: &'a Value) -> Result<Self, serde_json::Error> {
        let Value::Object(map) = args else {
            return Err(de::Error::custom("the arguments are not an object"));
        };
        Ok(Self {
            fields: Fields::Value(map),
            found: 0,
        })
    }

    /// The fields of an arguments object written as JSON text.
    pub(crate) fn from_text(text: &'a str) -> Result<Self, serde_json::Error> {
        let fields: BTreeMap<String, &'a RawValue> = serde_json::from_str(text)?;
        Ok(Self {
            fields: Fields::Text(fields),
            found: 0,
        })
    }

    /// Decodes the field `name`; a missing one is decoded as serde's derive decodes it.
    pub fn take<T: DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> Result<T, serde_json::Error> {
        match &self.fields {
            Fields::Value(map) => match map.get(name) {
                Some(value) => {
                    self.found += 1;
                    T::deserialize(value)
                }
                None => T::deserialize(Missing(name)),
            },
            Fields::Text(fields) => match fields.get(name) {
                Some(raw) => {
                    self.found += 1;
                    serde_json::from_str(raw.get())
                }
                None => T::deserialize(Missing(name)),
            },
        }
    }

    /// Refuses a field that none of `known` names, as `deny_unknown_fields` does.
    fn deny_unknown(&self, known: &'static [&'static str]) -> Result<(), serde_json::Error> {
        let is_unknown = |name: &&String| !known.contains(&name.as_str());
        let unknown = match &self.fields {
            // Every field present was taken: none is unknown.
            Fields::Value(map) if map.len() == self.found => None,
            Fields::Text(fields) if fields.len() == self.found => None,
            Fields::Value(map) => map.keys().find(is_unknown),
            Fields::Text(fields) => fields.keys().find(is_unknown),
        };
        match unknown {
            Some(name) => Err(de::Error::unknown_field(name, known)),
            None => Ok(()),
        }
    }
}

/// Decodes a call's `args` into `A` field by field, refusing unknown fields, with the
/// validator's checks and answers around it (what
/// [`Validator::decode_with`](crate::validate::Validator) does with serde's `Deserialize`).
pub(crate) fn decode<A: FieldArgs>(
    validator: &Validator,
    args: &Value,
    literals: &NumberLiterals,
) -> Result<A, Vec<ArgIssue>> {
    validator.decode_by(args, literals, |input| {
        let mut source = match input {
            Input::Value(value) => ArgSource::from_value(value)?,
            Input::Text(text) => ArgSource::from_text(text)?,
        };
        let decoded = A::decode(&mut source)?;
        source.deny_unknown(A::NAMES)?;
        Ok(decoded)
    })
}

/// What a missing field is decoded from: `None` for an `Option`, "missing field" for any
/// other type (serde's derive does the same with a deserializer of its own).
struct Missing(&'static str);

impl<'de> Deserializer<'de> for Missing {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The schema of an argument struct decoded field by field: the object schema schemars'
/// derive writes for it (`deny_unknown_fields`, a property per field with its doc comment's
/// title and description, `required` for every field that may not be left out).
pub(crate) struct FieldsSchema<A>(PhantomData<fn() -> A>);

impl<A: FieldArgs> JsonSchema for FieldsSchema<A> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("__FusionArgs")
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<A>())
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        object_schema(generator, A::FIELDS)
    }

    fn inline_schema() -> bool {
        false
    }
}

/// [`FieldsSchema`]'s work, compiled once for every tool.
fn object_schema(generator: &mut SchemaGenerator, fields: &[ArgField]) -> Schema {
    use schemars::_private::{
        get_title_and_description, insert_metadata_property_if_nonempty, insert_object_property,
    };
    let mut object = Map::new();
    object.insert("type".into(), "object".into());
    object.insert("additionalProperties".into(), Value::Bool(false));
    let mut schema = Schema::from(object);
    for field in fields {
        let (mut property, optional) = (field.schema)(generator);
        let (title, description) = get_title_and_description(field.doc);
        insert_metadata_property_if_nonempty(&mut property, "title", title);
        insert_metadata_property_if_nonempty(&mut property, "description", description);
        if !field.constraints.is_empty() {
            constraint::apply(&mut property, field.constraints);
        }
        insert_object_property(&mut schema, field.name, optional, property);
    }
    schema
}

#[cfg(test)]
mod tests {
    //! The two ways an argument struct is generated, side by side: serde's and schemars'
    //! derives (what `#[mcp_tool]` writes for parameters with attributes) and `FieldArgs`
    //! written as `#[mcp_tool]` writes it for the others. Both must list the same schema
    //! and decode every input alike.

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{ArgField, ArgSource, FieldArgs, FieldsSchema, field_schema};
    use crate::tool::constraint::{self, Constraint};
    use crate::{
        failure::issue::ArgIssue,
        tool::schema::input_schema,
        validate::{
            Validator,
            literal::{self, NumberLiterals},
        },
    };

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Point {
        x: i32,
        y: i32,
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Careful,
    }

    /// The parameters, written once for both ways. Doc lines are written without the
    /// space rustdoc keeps after `///`, so the two ways read the same text.
    macro_rules! twins {
        ($($(#[doc = $first:literal] $(#[doc = $rest:literal])*)? $name:ident: $ty:ty,)*) => {
            #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
            #[serde(deny_unknown_fields)]
            struct Derived {
                $($(#[doc = $first] $(#[doc = $rest])*)? $name: $ty,)*
            }

            #[derive(Debug, PartialEq)]
            struct ByField {
                $($name: $ty,)*
            }

            impl FieldArgs for ByField {
                const FIELDS: &'static [ArgField] = &[$(ArgField {
                    name: stringify!($name),
                    doc: concat!($($first $(, "\n", $rest)*)?),
                    schema: field_schema::<$ty>,
                    constraints: &[],
                },)*];
                const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

                fn decode(source: &mut ArgSource<'_>) -> Result<Self, serde_json::Error> {
                    Ok(Self { $($name: source.take(stringify!($name))?,)* })
                }
            }

            impl From<Derived> for ByField {
                fn from(derived: Derived) -> Self {
                    Self { $($name: derived.$name,)* }
                }
            }
        };
    }

    twins! {
        #[doc = "The name to use."]
        name: String,
        #[doc = "# How many"]
        #[doc = ""]
        #[doc = "A count, with a title."]
        count: i64,
        limit: u32,
        #[doc = "Say more."]
        verbose: Option<bool>,
        note: Option<String>,
        tags: Vec<String>,
        ratio: f64,
        at: Point,
        mode: Option<Mode>,
        huge: Option<u128>,
        extra: Value,
    }

    #[test]
    fn both_ways_list_the_same_schema() {
        let derived = input_schema::<Derived>();
        let by_field = input_schema::<FieldsSchema<ByField>>();
        assert_eq!(Value::Object(by_field), Value::Object(derived));
    }

    fn decode_both(
        args: Value,
    ) -> (
        Result<ByField, Vec<ArgIssue>>,
        Result<ByField, Vec<ArgIssue>>,
    ) {
        let validator = Validator::compile(&input_schema::<Derived>());
        let literals = NumberLiterals::default();
        let derived = validator
            .decode_with::<Derived>(&args, &literals)
            .map(ByField::from);
        let by_field = super::decode::<ByField>(&validator, &args, &literals);
        (derived, by_field)
    }

    #[test]
    fn both_ways_decode_alike() {
        let full = json!({
            "name": "ada", "count": 3, "limit": 7, "verbose": true, "note": "hi",
            "tags": ["a", "b"], "ratio": 0.5, "at": {"x": 1, "y": 2}, "mode": "fast",
            "huge": 5, "extra": {"any": [1]}
        });
        let cases = [
            ("every field", full.clone()),
            (
                "optionals left out",
                json!({
                    "name": "ada", "count": 3, "limit": 7, "tags": [], "ratio": 1.0,
                    "at": {"x": 1, "y": 2}, "extra": null
                }),
            ),
            (
                "integers sent as floats",
                json!({
                    "name": "ada", "count": 3.0, "limit": 7e0, "tags": [], "ratio": 1,
                    "at": {"x": 1.0, "y": 2}, "extra": 1, "huge": 1.0
                }),
            ),
            (
                "beyond 64 bits, as a float",
                json!({
                    "name": "ada", "count": 3, "limit": 7, "tags": [], "ratio": 1,
                    "at": {"x": 1, "y": 2}, "extra": 1, "huge": 1e30
                }),
            ),
            ("a required field missing", json!({"name": "ada"})),
            ("a value-typed field missing", {
                let mut args = full.clone();
                args.as_object_mut().map(|map| map.remove("extra"));
                args
            }),
            ("an unknown field", {
                let mut args = full.clone();
                args.as_object_mut()
                    .map(|map| map.insert("colour".into(), "red".into()));
                args
            }),
            (
                "wrong types",
                json!({
                    "name": 1, "count": "3", "limit": -1, "tags": "a", "ratio": "x",
                    "at": [1, 2], "mode": "slow", "extra": 1
                }),
            ),
            ("not an object", json!([1, 2])),
        ];
        for (case, args) in cases {
            let (derived, by_field) = decode_both(args);
            assert_eq!(by_field, derived, "{case}");
        }
    }

    #[test]
    fn beyond_64_bits_decodes_exactly() {
        // A `Value` holds no integer beyond 64 bits; the literal the client sent does, and
        // both ways decode it from JSON text rebuilt with it.
        let text = r#"{"name": "ada", "count": 3, "limit": 7, "tags": [], "ratio": 1,
            "at": {"x": 1, "y": 2}, "extra": 1, "huge": 1000000000000000000000000000000.0}"#;
        let args: Value = serde_json::from_str(text).expect("valid JSON");
        let literals = literal::literals_of(text, &args);
        let validator = Validator::compile(&input_schema::<Derived>());
        let by_field = super::decode::<ByField>(&validator, &args, &literals);
        let derived = validator
            .decode_with::<Derived>(&args, &literals)
            .map(ByField::from);
        assert_eq!(
            by_field.as_ref().map(|args| args.huge),
            Ok(Some(10u128.pow(30)))
        );
        assert_eq!(by_field, derived);
    }

    // A tool's constrained parameters, as `#[mcp_tool]` wrote them with the derives (a
    // schemars `transform` per field) and as it writes them now (constant data). No doc
    // comment: the derive would make it the schema's description.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct ConstrainedDerived {
        /// The user's name.
        #[schemars(transform = |schema: &mut schemars::Schema| {
            constraint::apply(schema, NAME);
        })]
        name: String,
        #[schemars(transform = |schema: &mut schemars::Schema| {
            constraint::apply(schema, COUNT);
        })]
        count: i64,
        /// Tags, each short.
        #[schemars(transform = |schema: &mut schemars::Schema| {
            constraint::apply(schema, TAGS);
        })]
        tags: Option<Vec<String>>,
    }

    const NAME: &[Constraint] = &[Constraint::Length {
        min: Some(1),
        max: Some(40),
    }];
    const COUNT: &[Constraint] = &[
        Constraint::Minimum(constraint::Literal::Int(1)),
        Constraint::Maximum(constraint::Literal::Int(50)),
    ];
    const TAGS: &[Constraint] = &[
        Constraint::Unique,
        Constraint::Items(&[Constraint::Length {
            min: None,
            max: Some(8),
        }]),
    ];

    struct ConstrainedByField;

    impl FieldArgs for ConstrainedByField {
        const FIELDS: &'static [ArgField] = &[
            ArgField {
                name: "name",
                doc: "The user's name.",
                schema: field_schema::<String>,
                constraints: NAME,
            },
            ArgField {
                name: "count",
                doc: "",
                schema: field_schema::<i64>,
                constraints: COUNT,
            },
            ArgField {
                name: "tags",
                doc: "Tags, each short.",
                schema: field_schema::<Option<Vec<String>>>,
                constraints: TAGS,
            },
        ];
        const NAMES: &'static [&'static str] = &["name", "count", "tags"];

        fn decode(_: &mut ArgSource<'_>) -> Result<Self, serde_json::Error> {
            Ok(Self)
        }
    }

    #[test]
    fn constraints_are_written_where_the_derive_writes_them() {
        let derived = input_schema::<ConstrainedDerived>();
        let by_field = input_schema::<FieldsSchema<ConstrainedByField>>();
        assert_eq!(Value::Object(by_field.clone()), Value::Object(derived));
        assert_eq!(by_field["properties"]["count"]["maximum"], json!(50));
        assert_eq!(by_field["properties"]["name"]["maxLength"], json!(40));
    }
}
