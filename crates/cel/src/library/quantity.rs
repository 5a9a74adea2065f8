//! Kubernetes' quantity library (`library.Quantity`): `quantity`,
//! `isQuantity` and the arithmetic and comparisons of `kubernetes.Quantity`,
//! on apimachinery's `resource.Quantity` (its parsing, representation and
//! known deviation are there).

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

/// A `kubernetes.Quantity`: apimachinery's `resource.Quantity` as a CEL
/// value, equal to another of the same value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity(pub apimachinery::quantity::Quantity);

impl cel::objects::Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY
    }
}

impl Quantity {
    /// `Quantity.Add`; past the digits kept, an overflow.
    fn add(&self, other: &Quantity) -> Result<Quantity, ExecutionError> {
        self.0
            .add(&other.0)
            .map(Quantity)
            .ok_or_else(|| error("add", "quantity overflow"))
    }

    fn neg(&self) -> Quantity {
        Quantity(self.0.neg())
    }
}

fn parse(s: &str) -> Result<Quantity, apimachinery::quantity::ParseError> {
    apimachinery::quantity::Quantity::parse(s).map(Quantity)
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
    int(quantity_arg(&args, 0)?.0.sign())
}

fn as_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelDouble::from(
        quantity_arg(&args, 0)?.0.as_approximate_f64(),
    )))
}

fn as_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    match quantity_arg(&args, 0)?.0.as_int64() {
        Some(i) => int(i),
        None => Err(error("asInteger", "cannot convert value to integer")),
    }
}

fn is_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(quantity_arg(&args, 0)?.0.as_int64().is_some())
}

fn add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&quantity_arg(&args, 1)?)?)
}

fn sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(quantity_arg(&args, 0)?.add(&quantity_arg(&args, 1)?.neg())?)
}

/// `resource.NewQuantity(i, DecimalExponent)`.
fn from_int(i: i64) -> Quantity {
    Quantity(apimachinery::quantity::Quantity::from_int(
        i,
        apimachinery::quantity::Format::DecimalExponent,
    ))
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
        self.0.cmp(&other.0)
    }
}
