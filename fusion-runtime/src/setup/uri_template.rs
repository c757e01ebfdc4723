//! URI templates of resource templates (RFC 6570 level 1 and reserved expansion):
//! parsing, the variables, and matching a URI.

use std::collections::HashMap;

/// A parsed URI template (RFC 6570 level 1 and reserved expansion): literal text and
/// `{name}` / `{+name}` variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `reserved` (`{+name}`) may match `/`, `?` and `#`.
    Variable {
        name: String,
        reserved: bool,
    },
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(start) => {
                    if start > 0 {
                        parts.push(Part::Literal(rest[..start].to_owned()));
                    }
                    let after = &rest[start + 1..];
                    let end = after
                        .find('}')
                        .ok_or_else(|| format!("`{{` at byte {start} is never closed"))?;
                    let expression = &after[..end];
                    let (name, reserved) = match expression.strip_prefix('+') {
                        Some(name) => (name, true),
                        None => (expression, false),
                    };
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    {
                        return Err(format!(
                            "`{{{expression}}}` is not a supported variable (use `{{name}}` or `{{+name}}` with letters, digits, `_` or `.`)"
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Variable { .. })) {
                        return Err(format!(
                            "`{{{expression}}}` follows another variable directly; separate them with literal text"
                        ));
                    }
                    parts.push(Part::Variable {
                        name: name.to_owned(),
                        reserved,
                    });
                    rest = &after[end + 1..];
                }
            }
        }
        if !parts
            .iter()
            .any(|part| matches!(part, Part::Variable { .. }))
        {
            return Err("a template needs at least one `{variable}`".to_owned());
        }
        Ok(Self { parts })
    }

    pub(crate) fn variables(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Variable { name, .. } => Some(name.clone()),
                Part::Literal(_) => None,
            })
            .collect()
    }

    /// The variables' (percent-decoded) values when `uri` matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut values = HashMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable { name, reserved } => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || (!reserved && raw.contains(['/', '?', '#'])) {
                        return None;
                    }
                    values.insert(name.clone(), percent_decode(raw)?);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_matches_its_variables() {
        let template = UriTemplate::parse("test://template/{id}/data").expect("as expected");
        let values = template
            .matches("test://template/123/data")
            .expect("as expected");
        assert_eq!(values["id"], "123");
        assert!(template.matches("test://template/1/2/data").is_none());
        assert!(template.matches("test://template//data").is_none());
        assert!(template.matches("test://template/123/data/more").is_none());
        assert_eq!(
            template
                .matches("test://template/a%20b/data")
                .expect("as expected")["id"],
            "a b"
        );
    }

    #[test]
    fn reserved_variables_span_segments() {
        let template = UriTemplate::parse("file:///{+path}").expect("as expected");
        assert_eq!(
            template.matches("file:///etc/hosts").expect("as expected")["path"],
            "etc/hosts"
        );
        let two = UriTemplate::parse("db://{table}/{id}").expect("as expected");
        let values = two.matches("db://users/7").expect("as expected");
        assert_eq!(
            (values["table"].as_str(), values["id"].as_str()),
            ("users", "7")
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(UriTemplate::parse("x://{id").is_err());
        assert!(UriTemplate::parse("x://{}").is_err());
        assert!(UriTemplate::parse("x://{a}{b}").is_err());
        assert!(UriTemplate::parse("x://plain").is_err());
        assert!(UriTemplate::parse("x://{a?}").is_err());
    }

    #[test]
    fn bad_percent_escapes_do_not_match() {
        let template = UriTemplate::parse("x://{id}").expect("as expected");
        assert!(template.matches("x://%zz").is_none());
        assert!(template.matches("x://%e2").is_none());
    }
}
