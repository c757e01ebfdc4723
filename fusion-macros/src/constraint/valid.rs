//! The rules between constraints, checked at compile time: bounds in order, a pattern
//! that compiles, a known format, a literal default that satisfies its own constraints.
//! Whether a constraint fits the parameter's *type* is left to rustc (see `expand.rs`).

use std::collections::HashSet;

use super::parse::{Constraints, Kind, Literal, Number};
use crate::{ctxt::Ctxt, symbol};

pub(crate) fn check(constraints: &Constraints, cx: &mut Ctxt) {
    let mut seen = HashSet::new();
    for constraint in &constraints.list {
        let key = constraint.key.to_string();
        if !seen.insert(key.clone()) {
            cx.error_spanned_by(&constraint.key, format!("`{key}` is given twice; keep one"));
        }
    }
    let find = |wanted: &str| {
        constraints
            .list
            .iter()
            .find(|c| c.key == wanted)
            .map(|c| &c.kind)
    };
    let number = |wanted: &str| match find(wanted) {
        Some(
            Kind::Min(n)
            | Kind::Max(n)
            | Kind::ExclusiveMin(n)
            | Kind::ExclusiveMax(n)
            | Kind::MultipleOf(n),
        ) => Some(n.clone()),
        _ => None,
    };
    let (min, max) = (number(symbol::MIN), number(symbol::MAX));
    let (exclusive_min, exclusive_max) =
        (number(symbol::EXCLUSIVE_MIN), number(symbol::EXCLUSIVE_MAX));
    if let (Some(min), Some(max)) = (&min, &max)
        && min.value > max.value
    {
        cx.error_at(
            min.span,
            format!(
                "`min = {}` is greater than `max = {}`: no value could pass; swap them",
                show(min),
                show(max)
            ),
        );
    }
    if let (Some(low), Some(high)) = (&exclusive_min, &exclusive_max)
        && low.value >= high.value
    {
        cx.error_at(
            low.span,
            format!(
                "`exclusive_min = {}` is not below `exclusive_max = {}`: no value could pass",
                show(low),
                show(high)
            ),
        );
    }
    if let Some(step) = number(symbol::MULTIPLE_OF)
        && step.value <= 0.0
    {
        cx.error_at(step.span, "`multiple_of` must be greater than 0");
    }
    let mut length = (None, None);
    for constraint in &constraints.list {
        match &constraint.kind {
            Kind::Length { min: Some(low), max: Some(high) } if low.value > high.value => cx.error_at(
                low.span,
                format!(
                    "`length(min = {}, max = {})`: the minimum is greater than the maximum; swap them",
                    show(low),
                    show(high)
                ),
            ),
            Kind::Length { min, max } => length = (min.clone(), max.clone()),
            Kind::Pattern(pattern) => {
                if let Err(error) = regex::Regex::new(&pattern.value()) {
                    cx.error_spanned_by(
                        pattern,
                        format!("`pattern` is not a valid regular expression: {}", last_line(&error.to_string())),
                    );
                }
            }
            Kind::Format(format) if !symbol::FORMATS.contains(&format.value().as_str()) => {
                cx.error_spanned_by(
                    format,
                    format!(
                        "unknown format `{}`; the formats are: {}",
                        format.value(),
                        symbol::FORMATS
                            .iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            Kind::OneOf(values) if values.is_empty() => {
                cx.error_spanned_by(&constraint.key, "`one_of` needs at least one value");
            }
            // Each item's constraints obey the same rules among themselves.
            Kind::Items(each) => check(each, cx),
            _ => {}
        }
    }
    if let Some(default) = constraints.default_expr()
        && let Some(value) = super::parse::literal(default)
    {
        let broken = match &value {
            Literal::Number(n) => number_rule(
                n,
                &min,
                &max,
                &exclusive_min,
                &exclusive_max,
                &number(symbol::MULTIPLE_OF),
            ),
            Literal::Str(text) => text_rule(text, constraints, &length),
            Literal::Bool(_) => None,
        };
        let one_of = constraints.list.iter().find_map(|c| match &c.kind {
            Kind::OneOf(values) => Some(values),
            _ => None,
        });
        let outside_list = one_of.filter(|values| !values.iter().any(|(v, _)| same(v, &value)));
        if let Some(rule) = broken {
            cx.error_spanned_by(default, format!("the default breaks its own constraint: {rule}; change the default or the constraint"));
        } else if outside_list.is_some() {
            cx.error_spanned_by(
                default,
                "the default is not one of the `one_of` values; add it to the list or change it",
            );
        }
    }
}

fn number_rule(
    n: &Number,
    min: &Option<Number>,
    max: &Option<Number>,
    exclusive_min: &Option<Number>,
    exclusive_max: &Option<Number>,
    step: &Option<Number>,
) -> Option<String> {
    if let Some(min) = min
        && n.value < min.value
    {
        return Some(format!("{} is below `min = {}`", show(n), show(min)));
    }
    if let Some(max) = max
        && n.value > max.value
    {
        return Some(format!("{} is above `max = {}`", show(n), show(max)));
    }
    if let Some(low) = exclusive_min
        && n.value <= low.value
    {
        return Some(format!(
            "{} is not above `exclusive_min = {}`",
            show(n),
            show(low)
        ));
    }
    if let Some(high) = exclusive_max
        && n.value >= high.value
    {
        return Some(format!(
            "{} is not below `exclusive_max = {}`",
            show(n),
            show(high)
        ));
    }
    if let Some(step) = step
        && step.value > 0.0
    {
        let quotient = n.value / step.value;
        if (quotient - quotient.round()).abs() > 1e-9 {
            return Some(format!("{} is not a multiple of {}", show(n), show(step)));
        }
    }
    None
}

fn text_rule(
    text: &str,
    constraints: &Constraints,
    length: &(Option<Number>, Option<Number>),
) -> Option<String> {
    let chars = text.chars().count() as f64;
    if let Some(min) = &length.0
        && chars < min.value
    {
        return Some(format!(
            "it has {chars} characters, fewer than `length(min = {})`",
            show(min)
        ));
    }
    if let Some(max) = &length.1
        && chars > max.value
    {
        return Some(format!(
            "it has {chars} characters, more than `length(max = {})`",
            show(max)
        ));
    }
    for constraint in &constraints.list {
        match &constraint.kind {
            Kind::NonEmpty if text.is_empty() => {
                return Some("it is empty but the field is `non_empty`".into());
            }
            Kind::Pattern(pattern) => {
                if let Ok(regex) = regex::Regex::new(&pattern.value())
                    && !regex.is_match(text)
                {
                    return Some(format!(
                        "it does not match `pattern = {:?}`",
                        pattern.value()
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

fn same(a: &Literal, b: &Literal) -> bool {
    match (a, b) {
        (Literal::Str(a), Literal::Str(b)) => a == b,
        (Literal::Bool(a), Literal::Bool(b)) => a == b,
        (Literal::Number(a), Literal::Number(b)) => a.value == b.value,
        _ => false,
    }
}

fn show(number: &Number) -> String {
    match number.int {
        Some(int) => int.to_string(),
        None => number.value.to_string(),
    }
}

/// The regex error's last non-empty line: the one that says what is wrong.
fn last_line(text: &str) -> String {
    text.lines()
        .rfind(|line| !line.trim().is_empty())
        .unwrap_or(text)
        .trim()
        .trim_start_matches("error: ")
        .to_owned()
}
