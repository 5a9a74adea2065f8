//! Kubernetes' CEL libraries on the `cel` crate (kube-apiserver 1.37's base
//! environment): runtime functions registered on the `Env`, and their
//! declarations for the type checker.
//!
//! One module per upstream library (`k8s.io/apiserver/pkg/cel/library`, and
//! cel-go's `ext.Sets`, `ext.TwoVarComprehensions`, `ext.Lists` and what its
//! optional library has beyond the `cel` crate's). Values of the Kubernetes
//! types (`net.IP`, `kubernetes.Quantity`, ...) are [`cel::objects::Opaque`]
//! values, equal as upstream compares them.
//!
//! Not here: the `image` library (not in the base environment), the cost
//! estimator (`crate::cost`). `includes` (the lists library's version 1,
//! new in 1.37) is registered although 1.37 only accepts it in stored
//! expressions (its environment for new expressions is 1.36's, its minimum
//! compatibility version); see [`STORED_ONLY`].

pub mod authz;
pub mod ext_lists;
pub mod format;
pub mod ip;
pub mod lists;
pub mod macros;
pub mod optionals;
pub mod quantity;
pub mod regex;
pub mod semver;
pub mod sets;
pub mod urls;

use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{CelBool, CelInt, CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::{Opaque, Value};
use cel::{DeclarationError, Env, ExecutionError};

/// Register every Kubernetes library function on `env`.
pub fn register(env: &mut Env) {
    // Only fails on a duplicate declaration: a bug of this module, caught by
    // its tests.
    if let Err(e) = try_register(env) {
        debug_assert!(false, "registering Kubernetes' CEL libraries: {e}");
    }
}

fn try_register(env: &mut Env) -> Result<(), DeclarationError> {
    lists::register(env)?;
    ext_lists::register(env)?;
    optionals::register(env)?;
    authz::register(env)?;
    regex::register(env)?;
    urls::register(env)?;
    quantity::register(env)?;
    ip::register(env)?;
    format::register(env)?;
    semver::register(env)?;
    sets::register(env)?;
    macros::register(env)?;
    Ok(())
}

/// The declarations of the functions `register` adds, in the checker's
/// notation (see `crate::decls`).
pub fn declarations() -> impl Iterator<Item = &'static str> {
    [
        lists::DECLARATIONS,
        ext_lists::DECLARATIONS,
        optionals::DECLARATIONS,
        authz::DECLARATIONS,
        regex::DECLARATIONS,
        urls::DECLARATIONS,
        quantity::DECLARATIONS,
        ip::DECLARATIONS,
        format::DECLARATIONS,
        semver::DECLARATIONS,
        sets::DECLARATIONS,
        macros::DECLARATIONS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// Functions kube-apiserver 1.37 has in its environment for stored
/// expressions only: a rule using them is rejected when written (1.37
/// compiles new expressions with the environment of its minimum
/// compatibility version, 1.36), but evaluated once stored, and accepted
/// again in an update that keeps it unchanged.
pub const STORED_ONLY: &[&str] = &["includes"];

// ---------------------------------------------------------------------------
// Helpers shared by the libraries.
// ---------------------------------------------------------------------------

/// The arguments of an overload: for a member overload, the receiver first.
pub(crate) type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
/// What an overload returns.
pub(crate) type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// A global overload.
pub(crate) fn global(
    env: &mut Env,
    name: &str,
    id: &str,
    args: Vec<Type>,
    f: Function,
) -> Result<(), DeclarationError> {
    env.add_overload(name, id, args, f)
}

/// A member overload on `target`.
pub(crate) fn member(
    env: &mut Env,
    name: &str,
    id: &str,
    target: Type,
    args: Vec<Type>,
    f: Function,
) -> Result<(), DeclarationError> {
    env.add_member_overload(name, id, target, args, f)
}

/// The type of the opaque values named `name`.
pub(crate) fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// An error of `function`, with upstream's message.
pub(crate) fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// The argument in position `i`.
pub(crate) fn nth<'a, 'b, 'v>(
    args: &'a Args<'b, 'v>,
    i: usize,
) -> Result<&'a (dyn Val + 'v), ExecutionError> {
    args.get(i)
        .map(|a| a.as_ref())
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))
}

/// The string argument in position `i`.
pub(crate) fn string_arg<'a>(args: &'a Args<'_, '_>, i: usize) -> Result<&'a str, ExecutionError> {
    let v = nth(args, i)?;
    v.downcast_ref::<CelString>()
        .map(|s| s.inner())
        .ok_or_else(|| unexpected(v, "string"))
}

/// The int argument in position `i`.
pub(crate) fn int_arg(args: &Args<'_, '_>, i: usize) -> Result<i64, ExecutionError> {
    let v = nth(args, i)?;
    <&i64>::try_from(v)
        .copied()
        .map_err(|_| unexpected(v, "int"))
}

/// The bool argument in position `i`.
pub(crate) fn bool_arg(args: &Args<'_, '_>, i: usize) -> Result<bool, ExecutionError> {
    let v = nth(args, i)?;
    match Value::try_from(v) {
        Ok(Value::Bool(b)) => Ok(b),
        _ => Err(unexpected(v, "bool")),
    }
}

/// The opaque `T` argument in position `i`.
pub(crate) fn opaque_arg<T: Opaque + Clone>(
    args: &Args<'_, '_>,
    i: usize,
    want: &str,
) -> Result<T, ExecutionError> {
    let v = nth(args, i)?;
    match Value::try_from(v) {
        Ok(Value::Opaque(o)) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or_else(|| unexpected(v, want)),
        _ => Err(unexpected(v, want)),
    }
}

fn unexpected(v: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType {
        got: v.get_type().name().to_owned(),
        want: want.to_owned(),
    }
}

/// An opaque value.
pub(crate) fn opaque<'b, 'v, T: Opaque>(value: T) -> Ret<'b, 'v> {
    from_value(Value::Opaque(Arc::new(value)))
}

/// A value built as a [`Value`].
pub(crate) fn from_value<'b, 'v>(value: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(value)?))
}

pub(crate) fn string<'b, 'v>(s: impl Into<String>) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelString::from(s.into())))
}

pub(crate) fn int<'b, 'v>(i: i64) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(i)))
}

pub(crate) fn boolean<'b, 'v>(b: bool) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

/// `-1`, `0` or `1`, as upstream's `compareTo`.
pub(crate) fn ordering(o: std::cmp::Ordering) -> i64 {
    match o {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }
}

/// An opaque library type with an order (`kubernetes.Quantity`,
/// `kubernetes.Semver`): its `isGreaterThan`, `isLessThan` and `compareTo`.
pub(crate) trait Ordered: Opaque + Clone + 'static {
    /// The upstream type name.
    const TYPE: &'static str;
    /// The overload id prefix (`quantity`).
    const PREFIX: &'static str;
    fn order(&self, other: &Self) -> std::cmp::Ordering;
}

fn order_of<T: Ordered>(args: &Args<'_, '_>) -> Result<std::cmp::Ordering, ExecutionError> {
    Ok(opaque_arg::<T>(args, 0, T::TYPE)?.order(&opaque_arg::<T>(args, 1, T::TYPE)?))
}

fn is_greater_than<'b, 'v, T: Ordered>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(order_of::<T>(&args)? == std::cmp::Ordering::Greater)
}

fn is_less_than<'b, 'v, T: Ordered>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(order_of::<T>(&args)? == std::cmp::Ordering::Less)
}

fn compare_to<'b, 'v, T: Ordered>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(ordering(order_of::<T>(&args)?))
}

/// Registers `T`'s three comparisons as members.
pub(crate) fn register_comparisons<T: Ordered>(env: &mut Env) -> Result<(), DeclarationError> {
    let t = || opaque_type(T::TYPE);
    let comparisons: [(&str, &str, Function); 3] = [
        ("isGreaterThan", "is_greater_than", is_greater_than::<T>),
        ("isLessThan", "is_less_than", is_less_than::<T>),
        ("compareTo", "compare_to", compare_to::<T>),
    ];
    for (name, id, f) in comparisons {
        member(env, name, &format!("{}_{id}", T::PREFIX), t(), vec![t()], f)?;
    }
    Ok(())
}
