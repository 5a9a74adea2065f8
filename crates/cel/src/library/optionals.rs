//! What cel-go's optional library adds at its version 2, which
//! kube-apiserver's environment has (it enables `cel.OptionalTypes()` at its
//! latest version) and the `cel` crate has not: `<list>.first()` and
//! `<list>.last()` (an optional of the element, `optional.none()` for an
//! empty list), `optional.unwrap(<list of optionals>)` and
//! `<list of optionals>.unwrapOpt()` (the values of those that have one).
//! The crate has the rest (`optional.of`, `optMap`, `optFlatMap`, …).

use cel::common::types::{CelList, CelOptional, LIST_TYPE};
use cel::common::value::{BuiltinRef, CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, global, member, nth};

pub(crate) const DECLARATIONS: &[&str] = &[
    "[list(A)].first() -> optional(A)",
    "[list(A)].last() -> optional(A)",
    "optional.unwrap(list(optional(A))) -> list(A)",
    "[list(optional(A))].unwrapOpt() -> list(A)",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    member(env, "first", "list_first", LIST_TYPE, vec![], first)?;
    member(env, "last", "list_last", LIST_TYPE, vec![], last)?;
    global(
        env,
        "optional.unwrap",
        "optional_unwrap",
        vec![LIST_TYPE],
        unwrap,
    )?;
    member(
        env,
        "unwrapOpt",
        "optional_unwrapOpt",
        LIST_TYPE,
        vec![],
        unwrap,
    )?;
    Ok(())
}

/// The elements of the list argument, borrowed.
fn elements<'a, 'v>(args: &'a Args<'_, 'v>) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let list = nth(args, 0)?;
    let mut items = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?
        .iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn optional_of<'b, 'v>(value: Option<&(dyn Val + 'v)>) -> Ret<'b, 'v> {
    Ok(CowVal::owned(match value {
        Some(v) => CelOptional::of(v.clone_as_boxed()),
        None => CelOptional::none(),
    }))
}

fn first<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    optional_of(elements(&args)?.first().copied())
}

fn last<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    optional_of(elements(&args)?.last().copied())
}

fn unwrap<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut values: Vec<Box<dyn Val + 'v>> = Vec::new();
    for item in elements(&args)? {
        match item.as_builtin() {
            BuiltinRef::Optional(o) => values.extend(o.option().map(|v| v.clone_as_boxed())),
            _ => {
                return Err(ExecutionError::UnexpectedType {
                    got: item.get_type().name().to_owned(),
                    want: "optional_type".to_owned(),
                });
            }
        }
    }
    Ok(CowVal::owned(CelList::from(values)))
}
