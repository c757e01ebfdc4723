//! `#[arg(...)]`: constraints on a tool parameter or on a field of an `#[mcp_type]` type.
//! Parse (`parse.rs`) → validate (`valid.rs`) → expand (`expand.rs`), shared by both macros.

mod expand;
mod parse;
mod valid;

pub(crate) use expand::{FieldCode, field_code};
pub(crate) use parse::{Constraints, parse_arg_attrs};
pub(crate) use valid::check;
