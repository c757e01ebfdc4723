//! The templates of `cargo fusion new` (`templates/*.tmpl`), rendered by minijinja:
//! `{{ key }}` placeholders, and `{% if flag %}` sections whose marker lines go with them
//! (`trim_blocks` and `lstrip_blocks`). A value is inserted as it is, never read as a
//! template itself, and nothing is escaped: the output is Rust, TOML and Markdown.

/// `template` rendered with `context`.
///
/// # Errors
/// A placeholder or a flag the context does not give (undefined values are errors), or a
/// template that does not parse: a mistake in the template.
pub(crate) fn render(template: &str, context: minijinja::Value) -> Result<String, String> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.render_str(template, context)
        .map_err(|error| error.to_string())
}
