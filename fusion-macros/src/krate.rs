//! How generated code reaches the runtime, decided in one place for every macro.
//!
//! By default it names `::fusion_runtime`, the crate users depend on. A user who reaches the
//! runtime through a re-export under another name writes `crate = path` (in `#[mcp_tool]`,
//! `#[mcp_type]` and `#[classify]`), as `#[serde(crate = "...")]` does; the pass case
//! `tests/ui/pass/crate_override.rs` proves it with every name the code could trip on
//! shadowed.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{LitStr, Path, meta::ParseNestedMeta};

/// The value of a `crate` key: `crate = "my::path"` or `crate = my::path`.
pub(crate) fn parse(meta: &ParseNestedMeta<'_>) -> syn::Result<Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        value.parse::<LitStr>()?.parse::<Path>()
    } else {
        value.parse::<Path>()
    }
}

/// The runtime's hidden module, which is all generated code names (besides `::core`):
/// `<crate>::__private`.
pub(crate) fn private(krate: Option<&Path>) -> TokenStream {
    match krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::fusion_runtime::__private),
    }
}

/// A crate re-exported by the runtime (`serde`, `schemars`) as the string their derives'
/// `crate = "..."` attribute takes, so users need neither crate as a dependency.
pub(crate) fn reexport(private: &TokenStream, name: &str) -> LitStr {
    // `TokenStream`'s `Display` spaces the `::`s, which a path in a string may not have.
    let path = format!("{private}::{name}").replace(' ', "");
    LitStr::new(&path, Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_the_runtime_crate() {
        let private = private(None);
        assert_eq!(
            reexport(&private, "serde").value(),
            "::fusion_runtime::__private::serde"
        );
    }

    #[test]
    fn follows_the_override() {
        let path: Path = syn::parse_quote!(crate::reexport::fusion);
        let private = private(Some(&path));
        assert_eq!(
            reexport(&private, "schemars").value(),
            "crate::reexport::fusion::__private::schemars"
        );
    }
}
