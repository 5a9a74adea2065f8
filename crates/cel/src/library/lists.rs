//! Kubernetes' lists library (`library.Lists`, version 1 as kube-apiserver
//! 1.37's base environment has it): `isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf` on lists, and `<dyn>.includes(<dyn>)`, new in
//! version 1 (1.37): for expressions already stored only, as 1.37 compiles
//! new ones in 1.36's environment (see [`super::STORED_ONLY`]).
//!
//! Every runtime list is a `list(dyn)`: one overload per function takes any
//! list, and the typed overloads upstream declares are in [`DECLARATIONS`].

use std::cmp::Ordering;

use cel::common::traits::Iterable;
use cel::common::types::{CelInt, DYN_TYPE, Kind, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, boolean, error, int, member, nth};

pub(crate) const DECLARATIONS: &[&str] = &[
    "[list(int)].isSorted() -> bool",
    "[list(uint)].isSorted() -> bool",
    "[list(double)].isSorted() -> bool",
    "[list(bool)].isSorted() -> bool",
    "[list(duration)].isSorted() -> bool",
    "[list(timestamp)].isSorted() -> bool",
    "[list(string)].isSorted() -> bool",
    "[list(bytes)].isSorted() -> bool",
    "[list(int)].sum() -> int",
    "[list(uint)].sum() -> uint",
    "[list(double)].sum() -> double",
    "[list(duration)].sum() -> duration",
    "[list(int)].min() -> int",
    "[list(uint)].min() -> uint",
    "[list(double)].min() -> double",
    "[list(bool)].min() -> bool",
    "[list(duration)].min() -> duration",
    "[list(timestamp)].min() -> timestamp",
    "[list(string)].min() -> string",
    "[list(bytes)].min() -> bytes",
    "[list(int)].max() -> int",
    "[list(uint)].max() -> uint",
    "[list(double)].max() -> double",
    "[list(bool)].max() -> bool",
    "[list(duration)].max() -> duration",
    "[list(timestamp)].max() -> timestamp",
    "[list(string)].max() -> string",
    "[list(bytes)].max() -> bytes",
    "[list(A)].indexOf(A) -> int",
    "[list(A)].lastIndexOf(A) -> int",
    "[dyn].includes(dyn) -> bool",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    member(
        env,
        "isSorted",
        "list_is_sorted_bool",
        LIST_TYPE,
        vec![],
        is_sorted,
    )?;
    member(env, "sum", "list_sum", LIST_TYPE, vec![], sum)?;
    member(env, "min", "list_min", LIST_TYPE, vec![], min)?;
    member(env, "max", "list_max", LIST_TYPE, vec![], max)?;
    member(
        env,
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    member(
        env,
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    member(
        env,
        "includes",
        "list_includes_dyn_dyn",
        DYN_TYPE,
        vec![DYN_TYPE],
        includes,
    )?;
    Ok(())
}

fn iterable<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<&'b (dyn Iterable + 'v), ExecutionError> {
    list.as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })
}

/// The elements of the list argument, borrowed.
fn elements<'a, 'v>(args: &'a Args<'_, 'v>) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let mut items = iterable(nth(args, 0)?)?.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| {
            error(
                function,
                format!(
                    "no such overload: {} is not comparable",
                    a.get_type().name()
                ),
            )
        })?
        .compare(b)
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let items = elements(&args)?;
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return boolean(false);
        }
    }
    boolean(true)
}

/// The sum of the elements; `0` for an empty list, whose element type is
/// unknown at runtime.
fn sum<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let items = elements(&args)?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut acc: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let next = acc
            .as_adder()
            .ok_or_else(|| {
                error(
                    "sum",
                    format!(
                        "no such overload: {} is not summable",
                        acc.get_type().name()
                    ),
                )
            })?
            .add(*item)?
            .into_owned();
        acc = next;
    }
    Ok(CowVal::Owned(acc))
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "min", Ordering::Greater)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "max", Ordering::Less)
}

/// The first element no other is preferred to: an element replaces the
/// current result when the result compares `replace` to it.
fn extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, replace: Ordering) -> Ret<'b, 'v> {
    let items = elements(&args)?;
    let mut result: Option<&(dyn Val + 'v)> = None;
    for item in items {
        result = match result {
            None => Some(item),
            Some(r) if compare(function, r, item)? == replace => Some(item),
            keep => keep,
        };
    }
    match result {
        Some(r) => Ok(CowVal::Owned(r.clone_as_boxed())),
        None => Err(error(function, format!("{function} called on empty list"))),
    }
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let needle = nth(&args, 1)?;
    let items = elements(&args)?;
    let found = items.iter().position(|item| item.equals(needle));
    int(found.map_or(-1, |i| i as i64))
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let needle = nth(&args, 1)?;
    let items = elements(&args)?;
    let found = items.iter().rposition(|item| item.equals(needle));
    int(found.map_or(-1, |i| i as i64))
}

/// Whether a list has an element equal to the argument; of anything else,
/// whether it equals the argument.
fn includes<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (target, needle) = (nth(&args, 0)?, nth(&args, 1)?);
    if target.get_type().kind() == Kind::List {
        let found = elements(&args)?.iter().any(|item| item.equals(needle));
        return boolean(found);
    }
    boolean(target.equals(needle))
}
