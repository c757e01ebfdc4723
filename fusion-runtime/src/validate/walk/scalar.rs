//! Strings (`minLength`, `maxLength`, `format`, `pattern`) and numbers (the declared
//! bounds, the range of the Rust type, exactness, `f32` overflow, `multipleOf`).

use serde_json::Value;

use crate::failure::{
    issue::IssueCode,
    wording::args::{self as words, Words},
};

use super::{
    super::{
        format,
        node::{Bound, NodeId},
        number::{self, IntegerView},
    },
    Walk,
};

impl Walk<'_> {
    pub(super) fn check_string(&mut self, id: NodeId, text: &str, value: &Value) {
        let node = &self.nodes[id];
        let chars = text.chars().count() as u64;
        if let Some(min) = node.min_length
            && chars < min
        {
            self.report(IssueCode::MinLength, words::too_short(min), Some(value));
        }
        if let Some(max) = node.max_length
            && chars > max
        {
            self.report(
                IssueCode::MaxLength,
                words::too_long(max, chars),
                Some(value),
            );
        }
        if let Some(format) = &node.format
            && format::conforms(format, text) == Some(false)
        {
            let expected = Words::expected(words::format(format));
            self.report(IssueCode::Format, expected, Some(value));
        }
        if let Some(pattern) = &node.pattern
            && !pattern.is_match(text)
        {
            self.report(
                IssueCode::Pattern,
                words::pattern(pattern.as_str()),
                Some(value),
            );
        }
    }

    pub(super) fn check_number(&mut self, id: NodeId, value: &Value) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let node = &self.nodes[id];
        let Value::Number(raw) = value else { return };
        // At an integer parameter, the number's exact integer (a value beyond every type
        // compares as an infinity); elsewhere the number as it is.
        let view = node.wants_integer().then(|| self.integer_view(raw, value));
        let number = match view {
            Some(IntegerView::Exact(int) | IntegerView::Rounded(int)) => Bound::Int(int),
            Some(IntegerView::Huge { negative }) => Bound::Float(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            // Reported by `check` already.
            Some(IntegerView::Fraction) => return,
            None => match Bound::of(raw) {
                Some(number) => number,
                None => return,
            },
        };
        let before = self.issues.len();
        type Expect = fn(&str) -> String;
        let checks: [(Option<Bound>, IssueCode, Expect, &[std::cmp::Ordering]); 4] = [
            (
                node.minimum,
                IssueCode::Minimum,
                words::at_least,
                &[Greater, Equal][..],
            ),
            (
                node.maximum,
                IssueCode::Maximum,
                words::at_most,
                &[Less, Equal][..],
            ),
            (
                node.exclusive_minimum,
                IssueCode::Minimum,
                words::greater_than,
                &[Greater][..],
            ),
            (
                node.exclusive_maximum,
                IssueCode::Maximum,
                words::less_than,
                &[Less][..],
            ),
        ];
        for (bound, code, expect, allowed) in checks {
            if let Some(bound) = bound
                && !number
                    .cmp(bound)
                    .is_some_and(|order| allowed.contains(&order))
            {
                let expected = Words::expected(expect(&bound.text()));
                self.report(code, expected, Some(value));
            }
        }
        // The type's own range, when no declared bound said more already.
        if let Some(view) = view
            && self.issues.len() == before
        {
            let int_type = node.int_type.unwrap_or(number::JSON_INTEGERS);
            let inside = match view {
                IntegerView::Exact(int) | IntegerView::Rounded(int) => int_type.holds(int),
                IntegerView::Huge { .. } | IntegerView::Fraction => false,
            };
            if !inside {
                let below = match view {
                    IntegerView::Exact(int) | IntegerView::Rounded(int) => int < int_type.min,
                    IntegerView::Huge { negative } => negative,
                    IntegerView::Fraction => false,
                };
                let edge = if below { int_type.min } else { int_type.max };
                let expected = int_type.describe();
                let said = words::out_of_range(expected, below, edge, int_type.name);
                self.report(IssueCode::Range, said, Some(value));
            } else if let IntegerView::Rounded(_) = view {
                let said = words::inexact(&int_type.describe());
                self.report(IssueCode::Inexact, said, Some(value));
            }
        }
        if node.float32 && !node.wants_integer() && number::overflows_f32(number.as_f64()) {
            self.report(IssueCode::Range, words::f32_overflow(), Some(value));
        }
        let number = number.as_f64();
        if let Some(step) = node.multiple_of {
            let quotient = number / step;
            if (quotient - quotient.round()).abs() > 1e-9 {
                self.report(IssueCode::MultipleOf, words::multiple_of(step), Some(value));
            }
        }
    }
}
