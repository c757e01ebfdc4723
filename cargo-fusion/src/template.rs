//! The templates of `cargo fusion new`: text with `{{key}}` placeholders, and sections of
//! whole lines kept or dropped by a flag: `{{#flag}}` .. `{{/flag}}` is kept when the flag
//! is set, `{{^flag}}` .. `{{/flag}}` when it is not. Each marker is a line of its own, and
//! goes with its section. A section may hold another.

/// `template` with its sections kept or dropped by `flags` and its placeholders replaced by
/// `values`. A value is inserted as it is, never read for placeholders itself (a path with
/// `{{` in it stays a path).
///
/// # Errors
/// A flag or a placeholder that is not given, or a section that is not closed in order:
/// a mistake in the template, named with its line.
pub(crate) fn render(
    template: &str,
    flags: &[(&str, bool)],
    values: &[(&str, &str)],
) -> Result<String, String> {
    let kept = sections(template, flags)?;
    placeholders(&kept, values)
}

/// The lines of `template` that its sections keep, without the markers.
fn sections(template: &str, flags: &[(&str, bool)]) -> Result<String, String> {
    // The open sections, innermost last: (flag, whether its lines are kept).
    let mut open: Vec<(&str, bool)> = Vec::new();
    let mut out = String::with_capacity(template.len());
    for (index, line) in template.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let marker = line
            .trim()
            .strip_prefix("{{")
            .and_then(|rest| rest.strip_suffix("}}"));
        let flag_value = |flag: &str| {
            flags
                .iter()
                .find(|(name, _)| *name == flag)
                .map(|(_, value)| *value)
                .ok_or_else(|| format!("line {number}: no flag `{flag}` for this template"))
        };
        let opens = marker.and_then(|marker| marker.strip_prefix('#'));
        let opens_inverted = marker.and_then(|marker| marker.strip_prefix('^'));
        let closes = marker.and_then(|marker| marker.strip_prefix('/'));
        match (opens, opens_inverted, closes) {
            (Some(flag), _, _) => open.push((flag, flag_value(flag)?)),
            (_, Some(flag), _) => open.push((flag, !flag_value(flag)?)),
            (_, _, Some(flag)) => match open.pop() {
                Some((opened, _)) if opened == flag => {}
                Some((opened, _)) => {
                    return Err(format!(
                        "line {number}: `{{{{/{flag}}}}}` closes the section `{opened}`"
                    ));
                }
                None => {
                    return Err(format!(
                        "line {number}: `{{{{/{flag}}}}}` closes no section"
                    ));
                }
            },
            _ => {
                if open.iter().all(|(_, keep)| *keep) {
                    out.push_str(line);
                }
            }
        }
    }
    match open.last() {
        Some((flag, _)) => Err(format!("the section `{flag}` is not closed")),
        None => Ok(out),
    }
}

/// `text` with each `{{key}}` replaced by its value, in one pass.
fn placeholders(text: &str, values: &[(&str, &str)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("`{{{{` without `}}}}` before: {}", preview(after)))?;
        let key = &after[..end];
        let value = values
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| *value)
            .ok_or_else(|| format!("no value for `{{{{{key}}}}}`"))?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The start of `text`, for an error message.
fn preview(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "a {{name}}\n{{#http}}\nhttp\n{{#redis}}\nhttp and redis\n{{/redis}}\n{{/http}}\n{{^http}}\n  stdio\n{{/http}}\nend\n";

    #[test]
    fn sections_keep_their_lines_by_flag_and_drop_the_markers() {
        let render_with = |http, redis| {
            render(
                TEMPLATE,
                &[("http", http), ("redis", redis)],
                &[("name", "x")],
            )
        };
        assert_eq!(
            render_with(false, true),
            Ok("a x\n  stdio\nend\n".to_owned())
        );
        assert_eq!(render_with(true, false), Ok("a x\nhttp\nend\n".to_owned()));
        assert_eq!(
            render_with(true, true),
            Ok("a x\nhttp\nhttp and redis\nend\n".to_owned())
        );
    }

    #[test]
    fn a_value_is_inserted_as_it_is() {
        let rendered = render("path = {{path}}\n", &[], &[("path", "/tmp/{{name}}")]);
        assert_eq!(rendered, Ok("path = /tmp/{{name}}\n".to_owned()));
    }

    #[test]
    fn a_mistake_in_a_template_is_named() {
        let unknown_flag = render("{{#tls}}\n{{/tls}}\n", &[], &[]);
        assert!(unknown_flag.is_err_and(|error| error.contains("`tls`")));
        let unclosed = render("{{#http}}\n", &[("http", true)], &[]);
        assert!(unclosed.is_err_and(|error| error.contains("not closed")));
        let crossed = render(
            "{{#http}}\n{{#redis}}\n{{/http}}\n{{/redis}}\n",
            &[("http", true), ("redis", true)],
            &[],
        );
        assert!(crossed.is_err_and(|error| error.contains("closes the section `redis`")));
        let unknown_value = render("{{port}}\n", &[], &[]);
        assert!(unknown_value.is_err_and(|error| error.contains("`{{port}}`")));
    }
}
