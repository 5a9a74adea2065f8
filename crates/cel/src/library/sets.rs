//! cel-go's sets extension (`ext.Sets`, in the base environment since 1.29):
//! `sets.contains`, `sets.equivalent`, `sets.intersects` on lists, with CEL's
//! equality (so `[1]` contains `[1.0]`).

use cel::common::traits::Iterable;
use cel::common::types::LIST_TYPE;
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, boolean, global, nth};

pub(crate) const DECLARATIONS: &[&str] = &[
    "sets.contains(list(T), list(T)) -> bool",
    "sets.equivalent(list(T), list(T)) -> bool",
    "sets.intersects(list(T), list(T)) -> bool",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    global(
        env,
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        contains,
    )?;
    global(
        env,
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        equivalent,
    )?;
    global(
        env,
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        intersects,
    )?;
    Ok(())
}

fn elements<'a, 'v>(list: &'a (dyn Val + 'v)) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable: &dyn Iterable =
        list.as_iterable()
            .ok_or_else(|| ExecutionError::UnexpectedType {
                got: list.get_type().name().to_owned(),
                want: "list".to_owned(),
            })?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

/// Whether every element of `sub` is in `list`.
fn includes(list: &[&dyn Val], sub: &[&dyn Val]) -> bool {
    sub.iter().all(|s| list.iter().any(|l| l.equals(*s)))
}

fn contains<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (elements(nth(&args, 0)?)?, elements(nth(&args, 1)?)?);
    boolean(includes(&a, &b))
}

fn equivalent<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (elements(nth(&args, 0)?)?, elements(nth(&args, 1)?)?);
    boolean(includes(&a, &b) && includes(&b, &a))
}

fn intersects<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = (elements(nth(&args, 0)?)?, elements(nth(&args, 1)?)?);
    boolean(a.iter().any(|x| b.iter().any(|y| x.equals(*y))))
}
