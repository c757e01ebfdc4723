//! Exact numbers: the value of a JSON number literal computed from its digits (never
//! through `f64`), the integers every Rust integer type can hold, and the ranges of the
//! fixed-width types schemars names with a `format`, and what a number sent for an integer
//! parameter is ([`IntegerView`]).
//!
//! serde_json (without `arbitrary_precision`, which fusion does not enable: it would reach
//! rmcp through feature unification and cost every call) reads any literal with a `.`, an
//! `e` or an `E`, and any integer beyond `i64`/`u64`, as an `f64`. These functions judge
//! such a number by the text the client sent instead (see [`super::literal`]).

use std::{cmp::Ordering, fmt};

use crate::failure::wording::args as words;

/// An exact integer from `-u128::MAX` to `u128::MAX`: wide enough for every Rust integer
/// type (`i128::MIN` and `u128::MAX` included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Wide {
    /// Never set for zero, so that `-0` and `0` are the same value.
    negative: bool,
    magnitude: u128,
}

impl Wide {
    pub(crate) const ZERO: Self = Self::new(false, 0);

    pub(crate) const fn new(negative: bool, magnitude: u128) -> Self {
        Self {
            negative: negative && magnitude != 0,
            magnitude,
        }
    }

    pub(crate) const fn from_i128(value: i128) -> Self {
        Self::new(value < 0, value.unsigned_abs())
    }

    pub(crate) const fn from_u128(value: u128) -> Self {
        Self::new(false, value)
    }

    /// The integer an integral `f64` is exactly, if it is finite and below 2^128.
    pub(crate) fn from_integral_f64(value: f64) -> Option<Self> {
        // 2^128 is exactly representable; every integral f64 below it converts exactly.
        const LIMIT: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;
        if !value.is_finite() || value.fract() != 0.0 || value.abs() >= LIMIT {
            return None;
        }
        Some(Self::new(value < 0.0, value.abs() as u128))
    }

    /// As JSON: an `i64` or a `u64` number, or `None` when `serde_json::Value` cannot hold it.
    pub(crate) fn to_json(self) -> Option<serde_json::Value> {
        if self.negative {
            let value = i128::try_from(self.magnitude).ok().map(|m| -m)?;
            i64::try_from(value).ok().map(serde_json::Value::from)
        } else {
            u64::try_from(self.magnitude)
                .ok()
                .map(serde_json::Value::from)
        }
    }

    /// The nearest `f64` (for comparing with a bound written as a float).
    pub(crate) fn to_f64(self) -> f64 {
        let magnitude = self.magnitude as f64;
        if self.negative { -magnitude } else { magnitude }
    }

    #[cfg(test)]
    pub(crate) fn is_negative(self) -> bool {
        self.negative
    }
}

impl Ord for Wide {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.negative, other.negative) {
            (false, false) => self.magnitude.cmp(&other.magnitude),
            (true, true) => other.magnitude.cmp(&self.magnitude),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Wide {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Wide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        write!(f, "{}", self.magnitude)
    }
}

/// What a JSON number literal is, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exact {
    /// An integer (`5`, `5.0`, `5e0`, `0.5e1`, `-0.0`), exactly.
    Integer(Wide),
    /// An integer beyond ±`u128::MAX` (`1e400`): outside every integer type's range.
    Huge {
        /// Its sign.
        negative: bool,
    },
    /// Not an integer (`4611686018427387903.5`, `5.0000000000000001`, `1e-400`).
    Fraction,
}

/// The exact value of `text` as a JSON number literal (RFC 8259 §6: `-? int frac? exp?`,
/// no leading zeros, no `+` sign before the digits), computed from its digits with integer
/// arithmetic. `None` when `text` is not such a literal.
///
/// Exponents of any size are judged (`1e400` is [`Exact::Huge`], `1e-400`
/// [`Exact::Fraction`], `0e999999` zero) without building the number.
pub(crate) fn exact(text: &str) -> Option<Exact> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let negative = bytes.first() == Some(&b'-');
    if negative {
        at += 1;
    }
    let digits_from = |at: usize| {
        bytes.get(at..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let int_start = at;
    match bytes.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at += digits_from(at),
        _ => return None,
    }
    let int_digits = bytes.get(int_start..at)?;
    let mut frac_digits: &[u8] = &[];
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        let count = digits_from(at);
        if count == 0 {
            return None;
        }
        frac_digits = bytes.get(at..at + count)?;
        at += count;
    }
    let mut exponent: i64 = 0;
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        let negative_exponent = match bytes.get(at) {
            Some(b'-') => {
                at += 1;
                true
            }
            Some(b'+') => {
                at += 1;
                false
            }
            _ => false,
        };
        let count = digits_from(at);
        if count == 0 {
            return None;
        }
        for digit in bytes.get(at..at + count)? {
            // Saturates far beyond any meaningful scale: the verdict stays right.
            exponent = exponent
                .saturating_mul(10)
                .saturating_add(i64::from(digit - b'0'));
        }
        at += count;
        if negative_exponent {
            exponent = -exponent;
        }
    }
    if at != bytes.len() {
        return None;
    }
    // value = digits × 10^scale, with the fraction's digits moved into the integer.
    let frac_len = i64::try_from(frac_digits.len()).unwrap_or(i64::MAX);
    let mut scale = exponent.saturating_sub(frac_len);
    let all: Vec<u8> = int_digits.iter().chain(frac_digits).copied().collect();
    let leading = all.iter().take_while(|&&digit| digit == b'0').count();
    let mut significant = &all[leading..];
    while let [rest @ .., b'0'] = significant {
        significant = rest;
        scale = scale.saturating_add(1);
    }
    if significant.is_empty() {
        return Some(Exact::Integer(Wide::ZERO));
    }
    if scale < 0 {
        return Some(Exact::Fraction);
    }
    // u128::MAX has 39 digits.
    let length = i64::try_from(significant.len())
        .unwrap_or(i64::MAX)
        .saturating_add(scale);
    if length > 39 {
        return Some(Exact::Huge { negative });
    }
    let zeros = usize::try_from(scale).unwrap_or(usize::MAX);
    let mut magnitude: u128 = 0;
    let digits = significant
        .iter()
        .map(|digit| u128::from(digit - b'0'))
        .chain(std::iter::repeat_n(0, zeros));
    for digit in digits {
        match magnitude
            .checked_mul(10)
            .and_then(|shifted| shifted.checked_add(digit))
        {
            Some(next) => magnitude = next,
            None => return Some(Exact::Huge { negative }),
        }
    }
    Some(Exact::Integer(Wide::new(negative, magnitude)))
}

/// A Rust integer type as its schema names it (`"format": "int64"`): its name and range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntType {
    /// The Rust name: `i64`, `u8`, `usize`.
    pub(crate) name: &'static str,
    pub(crate) min: Wide,
    pub(crate) max: Wide,
}

impl IntType {
    /// The type of a fixed-width integer `format`, as schemars writes them (`int8` …
    /// `int128`, `uint8` … `uint128`, `int`/`uint` for `isize`/`usize`).
    pub(crate) fn of_format(format: &str) -> Option<Self> {
        let signed = |name, min: i128, max: i128| Self {
            name,
            min: Wide::from_i128(min),
            max: Wide::from_i128(max),
        };
        let unsigned = |name, max: u128| Self {
            name,
            min: Wide::ZERO,
            max: Wide::from_u128(max),
        };
        Some(match format {
            "int8" => signed("i8", i8::MIN.into(), i8::MAX.into()),
            "int16" => signed("i16", i16::MIN.into(), i16::MAX.into()),
            "int32" => signed("i32", i32::MIN.into(), i32::MAX.into()),
            "int64" => signed("i64", i64::MIN.into(), i64::MAX.into()),
            "int" => signed("isize", isize::MIN as i128, isize::MAX as i128),
            "int128" => signed("i128", i128::MIN, i128::MAX),
            "uint8" => unsigned("u8", u8::MAX.into()),
            "uint16" => unsigned("u16", u16::MAX.into()),
            "uint32" => unsigned("u32", u32::MAX.into()),
            "uint64" => unsigned("u64", u64::MAX.into()),
            "uint" => unsigned("usize", usize::MAX as u128),
            "uint128" => unsigned("u128", u128::MAX),
            _ => return None,
        })
    }

    /// Whether the type holds `value`.
    pub(crate) fn holds(self, value: Wide) -> bool {
        self.min <= value && value <= self.max
    }

    /// "an integer from -128 to 127 (i8)".
    pub(crate) fn describe(self) -> String {
        words::integer_range(self.min, self.max, self.name)
    }
}

/// The integers a `serde_json::Value` holds exactly, for an integer schema without a
/// fixed-width `format` (a hand-written schema): `i64::MIN` to `u64::MAX`.
pub(crate) const JSON_INTEGERS: IntType = IntType {
    name: "i64 or u64",
    min: Wide::from_i128(i64::MIN as i128),
    max: Wide::from_u128(u64::MAX as u128),
};

/// Whether a finite `f64` becomes infinite as an `f32` (beyond ±`f32::MAX` after
/// rounding): what serde would silently turn into infinity for an `f32` parameter.
pub(crate) fn overflows_f32(value: f64) -> bool {
    value.is_finite() && (value as f32).is_infinite()
}

/// What a number at an integer parameter is, as exactly as it can be known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum IntegerView {
    /// Exactly this integer: a plain integer, a float whose literal says so, or an
    /// integral float below 2^53 (which no rounding can have produced from another
    /// integer).
    Exact(Wide),
    /// An integral float of 2^53 or more sent without its literal: close to this integer,
    /// but possibly rounded.
    Rounded(Wide),
    /// Beyond ±`u128::MAX`: outside every integer type.
    Huge { negative: bool },
    /// Not an integer.
    Fraction,
}

/// 2^53: below it, every integer is an `f64` of its own.
const EXACT_F64_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// The view of `number`, judged by `literal` when there is one that parses to the same
/// `f64` (serde_json's own parse, the one that produced the value): a literal that does
/// not is stale or forged, and ignored.
pub(crate) fn integer_view(number: &serde_json::Number, literal: Option<&str>) -> IntegerView {
    if let Some(int) = number.as_i64() {
        return IntegerView::Exact(Wide::from_i128(i128::from(int)));
    }
    if let Some(int) = number.as_u64() {
        return IntegerView::Exact(Wide::from_u128(u128::from(int)));
    }
    let Some(float) = number.as_f64() else {
        return IntegerView::Fraction;
    };
    if let Some(exact) = literal
        .filter(|text| serde_json::from_str::<f64>(text).ok() == Some(float))
        .and_then(exact)
    {
        return match exact {
            Exact::Integer(value) => IntegerView::Exact(value),
            Exact::Huge { negative } => IntegerView::Huge { negative },
            Exact::Fraction => IntegerView::Fraction,
        };
    }
    if float.fract() != 0.0 || !float.is_finite() {
        return IntegerView::Fraction;
    }
    match Wide::from_integral_f64(float) {
        Some(value) if float.abs() < EXACT_F64_INTEGERS => IntegerView::Exact(value),
        Some(value) => IntegerView::Rounded(value),
        None => IntegerView::Huge {
            negative: float < 0.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(text: &str) -> Wide {
        match exact(text) {
            Some(Exact::Integer(value)) => value,
            other => panic!("{text}: expected an integer, got {other:?}"),
        }
    }

    #[test]
    fn plain_integers_and_integers_written_as_floats() {
        for (text, value) in [
            ("0", "0"),
            ("5", "5"),
            ("5.0", "5"),
            ("5e0", "5"),
            ("5E+0", "5"),
            ("1.5e1", "15"),
            ("0.5e1", "5"),
            ("1.27e2", "127"),
            ("-1.28e2", "-128"),
            ("9007199254740993.0", "9007199254740993"),
            ("123456789012345678.9e1", "1234567890123456789"),
            ("-9223372036854775809", "-9223372036854775809"),
            ("1e38", "100000000000000000000000000000000000000"),
            (
                "340282366920938463463374607431768211455",
                "340282366920938463463374607431768211455",
            ),
            (
                "-340282366920938463463374607431768211455",
                "-340282366920938463463374607431768211455",
            ),
            ("12300e-2", "123"),
            ("0.000e5", "0"),
        ] {
            assert_eq!(int(text).to_string(), value, "{text}");
        }
    }

    #[test]
    fn negative_zero_is_zero() {
        for text in ["-0", "-0.0", "-0e5", "-0.000E-7", "0e999999999999999999999"] {
            assert_eq!(int(text), Wide::ZERO, "{text}");
            assert!(!int(text).is_negative());
        }
    }

    #[test]
    fn fractions_are_fractions_however_small_the_fraction() {
        for text in [
            "0.5",
            "4611686018427387903.5",
            "5.0000000000000001",
            "1e-1",
            "1e-400",
            "-1e-99999999999999999999999",
            "123456789012345678.91e1",
        ] {
            assert_eq!(exact(text), Some(Exact::Fraction), "{text}");
        }
    }

    #[test]
    fn huge_exponents_are_judged_without_building_the_number() {
        assert_eq!(exact("1e400"), Some(Exact::Huge { negative: false }));
        assert_eq!(exact("-1e400"), Some(Exact::Huge { negative: true }));
        assert_eq!(
            exact("1e99999999999999999999999999"),
            Some(Exact::Huge { negative: false })
        );
        // u128::MAX + 1 has 39 digits too, and overflows.
        assert_eq!(
            exact("340282366920938463463374607431768211456"),
            Some(Exact::Huge { negative: false })
        );
        assert_eq!(
            exact("1.5e99999999999999999999"),
            Some(Exact::Huge { negative: false })
        );
    }

    #[test]
    fn text_that_is_not_a_json_number_is_none() {
        for text in [
            "", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1.5.5", "0x10", "1_000", " 1",
            "1 ", "NaN", "Infinity", "--1", "1e5e5", "١",
        ] {
            assert_eq!(exact(text), None, "{text:?}");
        }
    }

    #[test]
    fn wide_integers_order_and_convert() {
        let min = Wide::from_i128(i128::MIN);
        let max = Wide::from_u128(u128::MAX);
        assert!(min < Wide::from_i128(-1));
        assert!(Wide::from_i128(-1) < Wide::ZERO);
        assert!(Wide::ZERO < max);
        assert_eq!(min.to_string(), i128::MIN.to_string());
        assert_eq!(Wide::from_i128(-5).to_json(), Some(serde_json::json!(-5)));
        assert_eq!(
            Wide::from_u128(u128::from(u64::MAX)).to_json(),
            Some(serde_json::json!(u64::MAX))
        );
        assert_eq!(Wide::from_u128(u128::from(u64::MAX) + 1).to_json(), None);
        assert_eq!(Wide::from_i128(i128::from(i64::MIN) - 1).to_json(), None);
        assert_eq!(
            Wide::from_integral_f64(-9007199254740992.0),
            Some(Wide::from_i128(-9007199254740992))
        );
        assert_eq!(Wide::from_integral_f64(0.5), None);
        assert_eq!(Wide::from_integral_f64(1e300), None);
    }

    #[test]
    fn integer_types_know_their_ranges() {
        let i8_type = IntType::of_format("int8").expect("int8");
        assert_eq!(i8_type.describe(), "an integer from -128 to 127 (i8)");
        assert!(i8_type.holds(Wide::from_i128(-128)));
        assert!(!i8_type.holds(Wide::from_i128(128)));
        let u128_type = IntType::of_format("uint128").expect("uint128");
        assert!(u128_type.holds(Wide::from_u128(u128::MAX)));
        assert!(!u128_type.holds(Wide::from_i128(-1)));
        assert_eq!(IntType::of_format("double"), None);
    }

    #[test]
    fn f32_overflow_is_detected_after_rounding() {
        assert!(overflows_f32(1e39));
        assert!(overflows_f32(-1e39));
        assert!(!overflows_f32(f64::from(f32::MAX)));
        assert!(!overflows_f32(3.4e38));
        assert!(!overflows_f32(1e-50));
    }
}
