//! `resource.Quantity`: parsing (`ParseQuantity`), comparison, addition and
//! the canonical text (`String`) as k8s.io/apimachinery has them. The amount
//! is an `int64` scaled by a power of ten when it fits (`int64Amount`, what
//! `AsInt64` looks at), an exact decimal otherwise (`inf.Dec`); the format
//! (binary, decimal or exponent) chooses the canonical suffix. Used by the
//! CEL quantity library and by admission (LimitRanger).
//!
//! Known deviation: a decimal with more than 38 significant digits is kept
//! to 38 (rounded away from zero), where upstream is arbitrary-precision.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity was written, and so how its canonical text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `12Mi` (12 × 2^20).
    BinarySI,
    /// `12M` (12 × 10^6).
    DecimalSI,
    /// `12e6`.
    DecimalExponent,
}

/// Why a string is not a quantity; `Display` is upstream's error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    FormatWrong,
    Numeric,
    Suffix,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseError::FormatWrong => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            ParseError::Numeric => "unable to parse numeric part of quantity",
            ParseError::Suffix => "unable to parse quantity's suffix",
        })
    }
}

impl std::error::Error for ParseError {}

/// `resource.MaxMilliValue`: the largest value whose milli-value fits an
/// `int64`.
pub const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// An exact decimal, `m × 10^e`, with no trailing zero in `m` (and `e = 0`
/// for zero).
#[derive(Clone, Copy, Debug)]
struct Decimal {
    m: i128,
    e: i32,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn digits(m: i128) -> i32 {
    let mut m = m.unsigned_abs();
    let mut n = 0;
    while m > 0 {
        m /= 10;
        n += 1;
    }
    n
}

impl Decimal {
    const ZERO: Decimal = Decimal { m: 0, e: 0 };

    fn new(mut m: i128, mut e: i32) -> Decimal {
        if m == 0 {
            return Decimal::ZERO;
        }
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        Decimal { m, e }
    }

    fn cmp(&self, other: &Decimal) -> Ordering {
        let (a, b) = (self.m.signum(), other.m.signum());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let magnitude = {
            // Compare the positions of the leading digits, then the digits.
            let (la, lb) = (digits(self.m) + self.e, digits(other.m) + other.e);
            if la != lb {
                la.cmp(&lb)
            } else if self.e >= other.e {
                10u128
                    .checked_pow((self.e - other.e) as u32)
                    .and_then(|p| self.m.unsigned_abs().checked_mul(p))
                    .map_or(Ordering::Greater, |shifted| {
                        shifted.cmp(&other.m.unsigned_abs())
                    })
            } else {
                10u128
                    .checked_pow((other.e - self.e) as u32)
                    .and_then(|p| other.m.unsigned_abs().checked_mul(p))
                    .map_or(Ordering::Less, |shifted| {
                        self.m.unsigned_abs().cmp(&shifted)
                    })
            }
        };
        if a > 0 {
            magnitude
        } else {
            magnitude.reverse()
        }
    }

    fn add(&self, other: &Decimal) -> Option<Decimal> {
        if self.m == 0 {
            return Some(*other);
        }
        if other.m == 0 {
            return Some(*self);
        }
        let e = self.e.min(other.e);
        let a = self
            .m
            .checked_mul(pow10(u32::try_from(self.e - e).ok()?)?)?;
        let b = other
            .m
            .checked_mul(pow10(u32::try_from(other.e - e).ok()?)?)?;
        Some(Decimal::new(a.checked_add(b)?, e))
    }

    fn to_f64(self) -> f64 {
        self.m as f64 * 10f64.powi(self.e)
    }

    /// The value when it is a whole number that fits.
    fn integer(self) -> Option<i128> {
        let e = u32::try_from(self.e).ok()?;
        self.m.checked_mul(pow10(e)?)
    }
}

/// `resource.Quantity`'s amount: an `int64Amount` (`value × 10^scale`) when
/// parsing or arithmetic could keep one, an `inf.Dec` otherwise.
#[derive(Clone, Copy, Debug)]
enum Amount {
    Int { value: i64, scale: i32 },
    Dec(Decimal),
}

/// A `resource.Quantity`: equal to (and ordered with) another by value.
#[derive(Clone, Debug)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// The text parsed, when upstream keeps it as the quantity's string
    /// (it is already canonical but for a sign or leading zeros).
    text: Option<Box<str>>,
}

impl Default for Quantity {
    /// The zero quantity (Go's `Quantity{}`), written `0`.
    fn default() -> Self {
        Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalExponent,
            text: None,
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    /// `Quantity.Cmp`.
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.decimal().cmp(&other.decimal())
    }
}

impl std::str::FromStr for Quantity {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Quantity, ParseError> {
        Quantity::parse(s)
    }
}

/// The smallest int64 exponent of ten a fast-path amount may have (nano).
const NANO: i32 = -9;

impl Quantity {
    /// `resource.NewQuantity(value, format)`.
    pub fn from_int(value: i64, format: Format) -> Quantity {
        Quantity {
            amount: Amount::Int { value, scale: 0 },
            format,
            text: None,
        }
    }

    /// `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, ParseError> {
        parse(s)
    }

    pub fn format(&self) -> Format {
        self.format
    }

    fn decimal(&self) -> Decimal {
        match self.amount {
            Amount::Int { value, scale } => Decimal::new(i128::from(value), scale),
            Amount::Dec(d) => d,
        }
    }

    /// `Quantity.Sign`: -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        self.decimal().m.signum() as i64
    }

    pub fn is_zero(&self) -> bool {
        self.sign() == 0
    }

    /// `Quantity.AsInt64`: only an `int64Amount` of a non-negative scale.
    pub fn as_int64(&self) -> Option<i64> {
        match self.amount {
            Amount::Int { value, scale: 0 } => Some(value),
            Amount::Int { value, scale } if scale > 0 => {
                value.checked_mul(10i64.checked_pow(u32::try_from(scale).ok()?)?)
            }
            _ => None,
        }
    }

    /// `Quantity.AsApproximateFloat64`.
    pub fn as_approximate_f64(&self) -> f64 {
        self.decimal().to_f64()
    }

    /// `Quantity.Add`: the sum, in this quantity's format (the other's when
    /// this one is zero); `None` past the 38 digits kept.
    pub fn add(&self, other: &Quantity) -> Option<Quantity> {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        if let (
            Amount::Int {
                value: a,
                scale: sa,
            },
            Amount::Int {
                value: b,
                scale: sb,
            },
        ) = (self.amount, other.amount)
            && let Some(amount) = int_add(a, sa, b, sb)
        {
            return Some(Quantity {
                amount,
                format,
                text: None,
            });
        }
        let sum = self.decimal().add(&other.decimal())?;
        Some(Quantity {
            amount: Amount::Dec(sum),
            format,
            text: None,
        })
    }

    /// `Quantity.Neg`.
    pub fn neg(&self) -> Quantity {
        let amount = match self.amount {
            Amount::Int { value, scale } => match value.checked_neg() {
                Some(value) => Amount::Int { value, scale },
                None => Amount::Dec(Decimal::new(-i128::from(value), scale)),
            },
            Amount::Dec(d) => Amount::Dec(Decimal { m: -d.m, e: d.e }),
        };
        Quantity {
            amount,
            format: self.format,
            text: None,
        }
    }

    /// `Quantity.Value`: rounded up to a whole number.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `Quantity.MilliValue`: `ceil(q × 1000)`; wrong past
    /// [`MAX_MILLI_VALUE`], as upstream's.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// `Quantity.ScaledValue`: `ceil(q / 10^scale)`. An `int64Amount` that
    /// overflows gives 0 and rounds away from zero, as upstream's.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        match self.amount {
            Amount::Int { value, scale: s } if s < scale => {
                negative_scale(value, (scale - s) as u32)
            }
            Amount::Int { value, scale: s } => {
                let up = u32::try_from(s - scale)
                    .ok()
                    .and_then(|n| 10i64.checked_pow(n))
                    .and_then(|p| value.checked_mul(p));
                up.unwrap_or(0)
            }
            Amount::Dec(d) if d.e >= scale => {
                let up = pow10((d.e - scale) as u32).unwrap_or(0);
                d.m.wrapping_mul(up) as i64
            }
            Amount::Dec(d) => match pow10((scale - d.e) as u32) {
                Some(p) => (d.m.div_euclid(p) + i128::from(d.m.rem_euclid(p) != 0)) as i64,
                None => i64::from(d.m > 0),
            },
        }
    }

    /// `Quantity.CanonicalizeBytes`: the number and suffix upstream writes.
    fn canonical(&self) -> String {
        let d = self.decimal();
        if d.m == 0 {
            return "0".into();
        }
        let binary = match self.format {
            Format::BinarySI => {
                let small = d.cmp(&Decimal::new(-1024, 0)) == Ordering::Greater
                    && d.cmp(&Decimal::new(1024, 0)) == Ordering::Less;
                // Below 1024 or not whole: written as decimal.
                if small { None } else { d.integer() }
            }
            _ => None,
        };
        if let Some(mut v) = binary {
            let negative = v < 0;
            v = v.abs();
            let mut times = 0;
            while v >= 1024 && v % 1024 == 0 {
                v /= 1024;
                times += 1;
            }
            let suffix = match times {
                1 => "Ki",
                2 => "Mi",
                3 => "Gi",
                4 => "Ti",
                5 => "Pi",
                6 => "Ei",
                _ => "",
            };
            let sign = if negative { "-" } else { "" };
            return format!("{sign}{v}{suffix}");
        }
        // The exponent made a multiple of three by adding zeros.
        let zeros = match d.e % 3 {
            1 | -2 => 1,
            2 | -1 => 2,
            _ => 0,
        };
        let e = d.e - zeros;
        let mut out = d.m.to_string();
        out.extend(std::iter::repeat_n('0', zeros as usize));
        match self.format {
            Format::DecimalExponent if e != 0 => {
                out.push('e');
                out.push_str(&e.to_string());
            }
            Format::DecimalExponent => {}
            _ => out.push_str(match e {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }),
        }
        out
    }
}

impl fmt::Display for Quantity {
    /// `Quantity.String`: the text parsed when upstream keeps it, else the
    /// canonical form (`500m`, `1536Mi`, `1e3`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(text) => f.write_str(text),
            None => f.write_str(&self.canonical()),
        }
    }
}

/// `negativeScaleInt64`: `base / 10^scale`, rounded away from zero.
fn negative_scale(base: i64, scale: u32) -> i64 {
    let mut value = base;
    let mut fraction = false;
    for _ in 0..scale {
        if !fraction && value % 10 != 0 {
            fraction = true;
        }
        value /= 10;
        if value == 0 {
            return match (fraction, base > 0) {
                (false, _) => 0,
                (true, true) => 1,
                (true, false) => -1,
            };
        }
    }
    match (fraction, base > 0) {
        (false, _) => value,
        (true, true) => value + 1,
        (true, false) => value - 1,
    }
}

/// `int64Amount.Add`: `None` when the sum doesn't fit.
fn int_add(a: i64, sa: i32, b: i64, sb: i32) -> Option<Amount> {
    if b == 0 {
        return Some(Amount::Int {
            value: a,
            scale: sa,
        });
    }
    if a == 0 {
        return Some(Amount::Int {
            value: b,
            scale: sb,
        });
    }
    let scale = sa.min(sb);
    let up = |v: i64, s: i32| v.checked_mul(10i64.checked_pow(u32::try_from(s - scale).ok()?)?);
    let value = up(a, sa)?.checked_add(up(b, sb)?)?;
    Some(Amount::Int { value, scale })
}

/// What Go's `parseQuantityString` splits a quantity into.
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, ParseError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ParseError::FormatWrong);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// The base, exponent and format a suffix stands for.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let binary = |e| Some((2, e, Format::BinarySI));
    let decimal = |e| Some((10, e, Format::DecimalSI));
    match suffix {
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            let e: i64 = rest.parse().ok()?;
            Some((
                10,
                e.clamp(i64::from(i32::MIN / 2), i64::from(i32::MAX / 2)) as i32,
                Format::DecimalExponent,
            ))
        }
    }
}

fn parse(s: &str) -> Result<Quantity, ParseError> {
    if s.is_empty() {
        return Err(ParseError::FormatWrong);
    }
    if s == "0" {
        return Ok(Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalSI,
            text: Some(s.into()),
        });
    }
    let Parts {
        positive,
        num,
        denom,
        suffix,
    } = split(s)?;
    let (base, exponent, mut format) = interpret(suffix).ok_or(ParseError::Suffix)?;

    // The fast path: an int64 scaled by a power of ten.
    let digit_count = (num.len() + denom.len()) as i32;
    let (mut scale, mantissa, precision) = match format {
        Format::DecimalSI | Format::DecimalExponent => (exponent, 1i64, 18 - digit_count),
        Format::BinarySI if denom.is_empty() => (
            0,
            1i64 << exponent,
            15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1,
        ),
        Format::BinarySI => (0, 1, -1),
    };
    if precision >= 0 {
        scale -= denom.len() as i32;
        if scale >= NANO {
            let shifted = format!("{num}{denom}");
            let value: i64 = shifted.parse().map_err(|_| ParseError::Numeric)?;
            if let Some(v) = value.checked_mul(mantissa) {
                // Upstream keeps the text when it is already canonical.
                let canonical = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
                };
                return Ok(Quantity {
                    amount: Amount::Int {
                        value: if positive { v } else { -v },
                        scale,
                    },
                    format,
                    text: canonical.then(|| s.into()),
                });
            }
        }
    }

    // The slow path: exact, rounded up to a nano, capped when binary.
    let mut significant = format!("{num}{denom}").trim_start_matches('0').to_owned();
    let mut e10: i64 = -(denom.len() as i64);
    if base == 10 {
        e10 += i64::from(exponent);
    }
    // Keep 38 digits at most; what is dropped makes the value inexact.
    let mut inexact = false;
    if significant.len() > 38 {
        let dropped = significant.len() - 38;
        inexact = significant[38..].bytes().any(|b| b != b'0');
        significant.truncate(38);
        e10 += dropped as i64;
    }
    let mut m: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().map_err(|_| ParseError::Numeric)?
    };
    if base == 2 {
        m = m.saturating_mul(1i128 << exponent);
    }
    let mut e = e10.clamp(i64::from(i32::MIN / 2), i64::from(i32::MAX / 2)) as i32;
    if m != 0 && e < NANO {
        let shift = (NANO - e) as u32;
        m = match pow10(shift) {
            Some(p) => {
                let up = m % p != 0 || inexact;
                m / p + i128::from(up)
            }
            None => 1,
        };
        e = NANO;
    } else if inexact && e < NANO {
        m += 1;
        e = NANO;
    }
    let mut d = Decimal::new(m, e);
    let max = Decimal::new(i128::from(i64::MAX), 0);
    if format == Format::BinarySI && d.cmp(&max) == Ordering::Greater {
        d = max;
    }
    // A binary amount between 0 and 1 is written as a decimal one.
    if format == Format::BinarySI && d.m != 0 && d.cmp(&Decimal::new(1, 0)) == Ordering::Less {
        format = Format::DecimalSI;
    }
    if !positive {
        d.m = -d.m;
    }
    Ok(Quantity {
        amount: Amount::Dec(d),
        format,
        text: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    // TestQuantityString: each canonical text is kept on parse, and each
    // alternate spelling is written canonically.
    #[test]
    fn canonical_text_is_upstreams() {
        for (expect, alternate) in [
            ("1Gi", "1024Mi"),
            ("300Mi", "307200Ki"),
            ("6Ki", ""),
            ("1001Gi", "1025024Mi"),
            ("1Ti", "1024Gi"),
            ("5", "5000m"),
            ("500m", "0.5"),
            ("1G", "1000M"),
            ("1G", "0.001T"),
            ("1m", "1000u"),
            ("80m", ""),
            ("1080m", "1.08"),
            ("1080m", "1080000000n"),
            ("300M", ""),
            ("1T", ""),
            ("1234567M", ""),
            ("1234567m", ""),
            ("3k", ""),
            ("1025", ""),
            ("0", "00"),
            ("1e9", ".001e12"),
            ("1e-3", "0.001e0"),
            ("1e-9", "1000e-12"),
            ("80e-3", ""),
            ("300e6", ""),
            ("1e12", ""),
            ("1e3", ""),
            ("3e3", ""),
            ("1n", ""),
            ("80n", ""),
            ("1080n", ""),
            ("1u", ""),
            ("80u", ""),
            ("1080u", ""),
        ] {
            let parsed = q(expect);
            assert_eq!(parsed.text.as_deref(), Some(expect), "kept: {expect}");
            assert_eq!(parsed.canonical(), expect, "canonical: {expect}");
            if !alternate.is_empty() {
                let parsed = q(alternate);
                assert_eq!(parsed.text, None, "{alternate}");
                assert_eq!(parsed.to_string(), expect, "{alternate}");
            }
            if expect != "0" {
                assert_eq!(q(expect).neg().to_string(), format!("-{expect}"));
            }
        }
    }

    // TestQuantityParseEmit, and its negative half.
    #[test]
    fn parse_then_emit() {
        for (input, expect) in [
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
        ] {
            assert_eq!(q(input).to_string(), expect, "{input}");
            assert_eq!(
                q(&format!("-{input}")).to_string(),
                format!("-{expect}"),
                "-{input}"
            );
        }
        // Sums are written canonically in the first one's format.
        let sum = q("1Gi").add(&q("512Mi")).unwrap();
        assert_eq!(sum.to_string(), "1536Mi");
        assert_eq!(q("600Mi").add(&q("700Mi")).unwrap().to_string(), "1300Mi");
        assert_eq!(q("100m").add(&q("0.9")).unwrap().to_string(), "1");
        assert_eq!(
            Quantity::default().add(&q("2Ki")).unwrap().to_string(),
            "2Ki"
        );
        // Upstream keeps a sign or leading zeros it would not write.
        assert_eq!(q("+5").to_string(), "+5");
        assert_eq!(q("05").to_string(), "05");
        assert_eq!(Quantity::default().to_string(), "0");
    }

    #[test]
    fn comparison_is_by_value() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("0.5"), q("500m"));
        assert_eq!(q("1e3"), q("1k"));
        assert!(q("1G") < q("1Gi"));
        assert!(q("100m") > q("99999u"));
        assert!(q("-1") < q("0"));
        assert!(q("1.5Gi") > q("1536Mi").neg());
    }

    // TestScaledValue, and Value/MilliValue rounding up.
    #[test]
    fn scaled_values_round_up() {
        for (from, to, expected) in [
            (-9, -9, 1),
            (-9, -6, 1),
            (-9, -3, 1),
            (-9, 0, 1),
            (-6, -9, 1000),
            (-6, -6, 1),
            (-6, -3, 1),
            (-6, 0, 1),
            (-3, -9, 1_000_000),
            (-3, -6, 1000),
            (-3, -3, 1),
            (-3, 0, 1),
            (0, -9, 1_000_000_000),
            (0, -6, 1_000_000),
            (0, -3, 1000),
            (0, 0, 1),
            (2, -2, 100 * 100),
        ] {
            let one = Quantity {
                amount: Amount::Int {
                    value: 1,
                    scale: from,
                },
                format: Format::DecimalSI,
                text: None,
            };
            assert_eq!(one.scaled_value(to), expected, "{from} to {to}");
        }
        assert_eq!(q("100m").value(), 1);
        assert_eq!(q("100m").milli_value(), 100);
        assert_eq!(q("1.5Gi").value(), 1_610_612_736);
        assert_eq!(q("1.5Gi").milli_value(), 1_610_612_736_000);
        assert_eq!(q("0.0001").milli_value(), 1);
        assert_eq!(q("-1500m").value(), -2);
        assert_eq!(q("1e30").value(), 0);
        assert_eq!(Quantity::default().milli_value(), 0);
    }

    #[test]
    fn errors_are_upstreams() {
        assert_eq!(Quantity::parse(""), Err(ParseError::FormatWrong));
        assert_eq!(Quantity::parse("1.2.3"), Err(ParseError::FormatWrong));
        assert_eq!(Quantity::parse("1Zi"), Err(ParseError::FormatWrong));
        assert_eq!(Quantity::parse("1ki"), Err(ParseError::Suffix));
        assert_eq!(
            ParseError::Suffix.to_string(),
            "unable to parse quantity's suffix"
        );
    }
}
