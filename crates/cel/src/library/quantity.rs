//! Kubernetes' quantity library (`library.Quantity`): `quantity`,
//! `isQuantity` and the arithmetic and comparisons of `kubernetes.Quantity`,
//! with `resource.Quantity`'s parsing and representation: an `int64` scaled
//! by a power of ten when it fits (what `isInteger`/`asInteger` look at), an
//! exact decimal otherwise.
//!
//! Known deviation: a decimal with more than 38 significant digits is kept
//! to 38 (rounded away from zero), where upstream is arbitrary-precision.

use std::cmp::Ordering;

use cel::common::types::{CelDouble, INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

use super::{
    Args, Ret, boolean, error, global, int, int_arg, member, opaque, opaque_arg, opaque_type,
    string_arg,
};

const QUANTITY: &str = "kubernetes.Quantity";

pub(crate) const DECLARATIONS: &[&str] = &[
    "quantity(string) -> kubernetes.Quantity",
    "isQuantity(string) -> bool",
    "sign(kubernetes.Quantity) -> int",
    "[kubernetes.Quantity].isGreaterThan(kubernetes.Quantity) -> bool",
    "[kubernetes.Quantity].isLessThan(kubernetes.Quantity) -> bool",
    "[kubernetes.Quantity].compareTo(kubernetes.Quantity) -> int",
    "[kubernetes.Quantity].asApproximateFloat() -> double",
    "[kubernetes.Quantity].asInteger() -> int",
    "[kubernetes.Quantity].isInteger() -> bool",
    "[kubernetes.Quantity].add(kubernetes.Quantity) -> kubernetes.Quantity",
    "[kubernetes.Quantity].add(int) -> kubernetes.Quantity",
    "[kubernetes.Quantity].sub(kubernetes.Quantity) -> kubernetes.Quantity",
    "[kubernetes.Quantity].sub(int) -> kubernetes.Quantity",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || opaque_type(QUANTITY);
    global(
        env,
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    global(
        env,
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    global(env, "sign", "quantity_sign", vec![q()], sign)?;
    member(
        env,
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        as_float,
    )?;
    member(
        env,
        "asInteger",
        "quantity_get_int",
        q(),
        vec![],
        as_integer,
    )?;
    member(
        env,
        "isInteger",
        "quantity_is_integer",
        q(),
        vec![],
        is_integer,
    )?;
    member(env, "add", "quantity_add", q(), vec![q()], add)?;
    member(env, "add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    member(env, "sub", "quantity_sub", q(), vec![q()], sub)?;
    member(env, "sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    super::register_comparisons::<Quantity>(env)?;
    Ok(())
}

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
}

/// `resource.Quantity`'s amount: an `int64Amount` (`value × 10^scale`) when
/// parsing or arithmetic could keep one, an `inf.Dec` otherwise.
#[derive(Clone, Copy, Debug)]
enum Amount {
    Int { value: i64, scale: i32 },
    Dec(Decimal),
}

/// A `kubernetes.Quantity`; equal to another of the same value.
#[derive(Clone, Copy, Debug)]
pub struct Quantity(Amount);

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl cel::objects::Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY
    }
}

const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC: &str = "unable to parse numeric part of quantity";
const SUFFIX: &str = "unable to parse quantity's suffix";

/// The smallest int64 exponent of ten a fast-path amount may have (nano).
const NANO: i32 = -9;

impl Quantity {
    fn decimal(&self) -> Decimal {
        match self.0 {
            Amount::Int { value, scale } => Decimal::new(i128::from(value), scale),
            Amount::Dec(d) => d,
        }
    }

    fn cmp(&self, other: &Quantity) -> Ordering {
        self.decimal().cmp(&other.decimal())
    }

    fn sign(&self) -> i64 {
        self.decimal().m.signum() as i64
    }

    /// `Quantity.AsInt64`: only an `int64Amount` of a non-negative scale.
    fn as_int64(&self) -> Option<i64> {
        match self.0 {
            Amount::Int { value, scale: 0 } => Some(value),
            Amount::Int { value, scale } if scale > 0 => {
                value.checked_mul(10i64.checked_pow(u32::try_from(scale).ok()?)?)
            }
            _ => None,
        }
    }

    /// `Quantity.Add`.
    fn add(&self, other: &Quantity) -> Result<Quantity, ExecutionError> {
        if let (
            Amount::Int {
                value: a,
                scale: sa,
            },
            Amount::Int {
                value: b,
                scale: sb,
            },
        ) = (self.0, other.0)
            && let Some(sum) = int_add(a, sa, b, sb)
        {
            return Ok(Quantity(sum));
        }
        self.decimal()
            .add(&other.decimal())
            .map(|d| Quantity(Amount::Dec(d)))
            .ok_or_else(|| error("add", "quantity overflow"))
    }

    fn neg(&self) -> Quantity {
        Quantity(match self.0 {
            Amount::Int { value, scale } => match value.checked_neg() {
                Some(value) => Amount::Int { value, scale },
                None => Amount::Dec(Decimal::new(-i128::from(value), scale)),
            },
            Amount::Dec(d) => Amount::Dec(Decimal { m: -d.m, e: d.e }),
        })
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

fn split(s: &str) -> Result<Parts<'_>, &'static str> {
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
        return Err(FORMAT_WRONG);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    BinarySI,
    DecimalSI,
    DecimalExponent,
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

/// `resource.ParseQuantity`.
fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(FORMAT_WRONG);
    }
    if s == "0" {
        return Ok(Quantity(Amount::Int { value: 0, scale: 0 }));
    }
    let Parts {
        positive,
        num,
        denom,
        suffix,
    } = split(s)?;
    let (base, exponent, format) = interpret(suffix).ok_or(SUFFIX)?;

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
            let value: i64 = shifted.parse().map_err(|_| NUMERIC)?;
            if let Some(v) = value.checked_mul(mantissa) {
                let value = if positive { v } else { -v };
                return Ok(Quantity(Amount::Int { value, scale }));
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
        significant.parse().map_err(|_| NUMERIC)?
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
    if !positive {
        d.m = -d.m;
    }
    Ok(Quantity(Amount::Dec(d)))
}

fn quantity_arg(args: &Args<'_, '_>, i: usize) -> Result<Quantity, ExecutionError> {
    opaque_arg::<Quantity>(args, i, QUANTITY)
}

fn to_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match parse(string_arg(&args, 0)?) {
        Ok(q) => opaque(q),
        Err(e) => Err(error("quantity", e)),
    }
}

fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(parse(string_arg(&args, 0)?).is_ok())
}

fn sign<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(quantity_arg(&args, 0)?.sign())
}

fn as_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelDouble::from(
        quantity_arg(&args, 0)?.decimal().to_f64(),
    )))
}

fn as_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match quantity_arg(&args, 0)?.as_int64() {
        Some(i) => int(i),
        None => Err(error("asInteger", "cannot convert value to integer")),
    }
}

fn is_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(quantity_arg(&args, 0)?.as_int64().is_some())
}

fn add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&quantity_arg(&args, 1)?)?)
}

fn sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&quantity_arg(&args, 1)?.neg())?)
}

/// `resource.NewQuantity(i, DecimalExponent)`.
fn from_int(i: i64) -> Quantity {
    Quantity(Amount::Int { value: i, scale: 0 })
}

fn add_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&from_int(int_arg(&args, 1)?))?)
}

fn sub_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&from_int(int_arg(&args, 1)?).neg())?)
}

impl super::Ordered for Quantity {
    const TYPE: &'static str = QUANTITY;
    const PREFIX: &'static str = "quantity";
    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}
