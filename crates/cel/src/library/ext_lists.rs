//! cel-go's lists extension (`ext.Lists`, version 3 as kube-apiserver's base
//! environment has it since 1.34): `lists.range(n)`, and on lists
//! `slice(start, end)`, `flatten()`, `flatten(depth)`, `distinct()`,
//! `reverse()`, `sort()` and the `sortBy(var, key)` macro
//! ([`super::macros`]), which sorts through `@sortByAssociatedKeys`.
//!
//! Every runtime list is a `list(dyn)`: one overload per function takes any
//! list, and the typed overloads cel-go declares are in [`DECLARATIONS`]
//! (`sort` only on lists of comparable types, `flatten()` only on lists of
//! lists). Errors carry cel-go's texts.
//!
//! Where kube-apiserver 1.37.2 differs: `sort` and `sortBy` are stable here;
//! cel-go's `sort.Slice` is too for lists of up to 12 elements, beyond that
//! elements with equal keys may come out in another order. An error in
//! `sortBy`'s key expression is reported as itself (`no such key: x`);
//! cel-go's binding then fails with `internal error: interface conversion:
//! *types.Err is not traits.Lister: missing method Add`.

use std::cmp::Ordering;

use cel::common::types::{CelInt, CelList, INT_TYPE, Kind, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, error, global, int_arg, member, nth};

/// The key sorting function `sortBy` expands to (not callable from CEL).
pub(crate) const SORT_BY_KEYS: &str = "@sortByAssociatedKeys";

/// The most elements `lists.range` makes (cel-go's default, which
/// kube-apiserver keeps).
const MAX_RANGE: i64 = 1_000_000;

pub(crate) const DECLARATIONS: &[&str] = &[
    "[list(A)].slice(int, int) -> list(A)",
    "[list(list(A))].flatten() -> list(A)",
    "[list(dyn)].flatten(int) -> list(dyn)",
    "[list(int)].sort() -> list(int)",
    "[list(uint)].sort() -> list(uint)",
    "[list(double)].sort() -> list(double)",
    "[list(bool)].sort() -> list(bool)",
    "[list(duration)].sort() -> list(duration)",
    "[list(timestamp)].sort() -> list(timestamp)",
    "[list(string)].sort() -> list(string)",
    "[list(bytes)].sort() -> list(bytes)",
    "[list(A)].@sortByAssociatedKeys(list(int)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(uint)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(double)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(bool)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(duration)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(timestamp)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(string)) -> list(A)",
    "[list(A)].@sortByAssociatedKeys(list(bytes)) -> list(A)",
    "lists.range(int) -> list(int)",
    "[list(A)].reverse() -> list(A)",
    "[list(A)].distinct() -> list(A)",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    member(
        env,
        "slice",
        "list_slice",
        LIST_TYPE,
        vec![INT_TYPE, INT_TYPE],
        slice,
    )?;
    member(env, "flatten", "list_flatten", LIST_TYPE, vec![], flatten)?;
    member(
        env,
        "flatten",
        "list_flatten_int",
        LIST_TYPE,
        vec![INT_TYPE],
        flatten_to_depth,
    )?;
    member(
        env,
        "distinct",
        "list_distinct",
        LIST_TYPE,
        vec![],
        distinct,
    )?;
    member(env, "reverse", "list_reverse", LIST_TYPE, vec![], reverse)?;
    member(env, "sort", "list_sort", LIST_TYPE, vec![], sort)?;
    member(
        env,
        SORT_BY_KEYS,
        "list_sort_by_associated_keys",
        LIST_TYPE,
        vec![LIST_TYPE],
        sort_by_associated_keys,
    )?;
    global(env, "lists.range", "lists_range", vec![INT_TYPE], range)?;
    Ok(())
}

fn is_list(v: &dyn Val) -> bool {
    v.get_type().kind() == Kind::List
}

/// The elements of `list`, borrowed.
fn items<'a, 'v>(list: &'a (dyn Val + 'v)) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .filter(|_| is_list(list))
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut it = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = it.next() {
        out.push(item);
    }
    Ok(out)
}

fn list_of<'b, 'v>(elements: Vec<Box<dyn Val + 'v>>) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelList::from(elements)))
}

fn cloned<'v>(elements: &[&(dyn Val + 'v)]) -> Vec<Box<dyn Val + 'v>> {
    elements.iter().map(|e| e.clone_as_boxed()).collect()
}

fn slice<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (start, end) = (int_arg(&args, 1)?, int_arg(&args, 2)?);
    let elements = items(nth(&args, 0)?)?;
    let refuse = |why: String| error("slice", format!("cannot slice({start}, {end}), {why}"));
    if start < 0 || end < 0 {
        return Err(refuse("negative indexes not supported".into()));
    }
    if start > end {
        return Err(refuse(
            "start index must be less than or equal to end index".into(),
        ));
    }
    let len = elements.len();
    let (Ok(from), Ok(to)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(refuse(format!("list is length {len}")));
    };
    match elements.get(from..to) {
        Some(kept) => list_of(cloned(kept)),
        None => Err(refuse(format!("list is length {len}"))),
    }
}

fn flatten<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    flattened(nth(&args, 0)?, 1)
}

fn flatten_to_depth<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    flattened(nth(&args, 0)?, int_arg(&args, 1)?)
}

fn flattened<'b, 'v>(list: &(dyn Val + 'v), depth: i64) -> Ret<'b, 'v> {
    let mut out = Vec::new();
    splice(list, depth, &mut out)?;
    list_of(out)
}

/// Appends the elements of `list` to `out`, those that are lists spliced
/// in `depth` levels deep.
fn splice<'v>(
    list: &(dyn Val + 'v),
    depth: i64,
    out: &mut Vec<Box<dyn Val + 'v>>,
) -> Result<(), ExecutionError> {
    if depth < 0 {
        return Err(error("flatten", "level must be non-negative"));
    }
    for element in items(list)? {
        if depth > 0 && is_list(element) {
            splice(element, depth - 1, out)?;
        } else {
            out.push(element.clone_as_boxed());
        }
    }
    Ok(())
}

/// The first of each run of equal elements (CEL's equality: `1`, `1u` and
/// `1.0` are one), in order.
fn distinct<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut unique: Vec<&dyn Val> = Vec::new();
    for element in items(nth(&args, 0)?)? {
        if !unique.iter().any(|u| u.equals(element)) {
            unique.push(element);
        }
    }
    list_of(cloned(&unique))
}

fn reverse<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut elements = items(nth(&args, 0)?)?;
    elements.reverse();
    list_of(cloned(&elements))
}

fn sort<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let elements = items(nth(&args, 0)?)?;
    let order = sorted_order(&elements)?;
    list_of(
        order
            .iter()
            .map(|&i| elements[i].clone_as_boxed())
            .collect(),
    )
}

/// `list` ordered by `keys`, the key of each element at its index.
fn sort_by_associated_keys<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let elements = items(nth(&args, 0)?)?;
    let keys = items(nth(&args, 1)?)?;
    if elements.len() != keys.len() {
        return Err(error(
            "sortBy",
            format!(
                "{SORT_BY_KEYS}() expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
                elements.len(),
                keys.len()
            ),
        ));
    }
    let order = sorted_order(&keys)?;
    list_of(
        order
            .iter()
            .map(|&i| elements[i].clone_as_boxed())
            .collect(),
    )
}

/// The indexes of `keys` in ascending order of the keys, which must be of
/// one comparable type (cel-go's checks: the first key comparable, every
/// other of its type).
fn sorted_order(keys: &[&dyn Val]) -> Result<Vec<usize>, ExecutionError> {
    let Some(first) = keys.first() else {
        return Ok(Vec::new());
    };
    if first.as_comparer().is_none() {
        return Err(error("sort", "list elements must be comparable"));
    }
    if keys.iter().any(|k| k.get_type() != first.get_type()) {
        return Err(error("sort", "list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    // Values that do not order (a NaN) compare as equal, as cel-go's
    // less-than finds neither smaller.
    order.sort_by(|&a, &b| {
        keys[a]
            .as_comparer()
            .and_then(|c| c.compare(keys[b]).ok())
            .unwrap_or(Ordering::Equal)
    });
    Ok(order)
}

/// `[0, 1, …, n - 1]`.
fn range<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let n = int_arg(&args, 0)?;
    if n < 0 {
        return Err(error(
            "lists.range",
            format!("lists.range: size must be non-negative, got {n}"),
        ));
    }
    if n > MAX_RANGE {
        return Err(error(
            "lists.range",
            format!("lists.range: size {n} exceeds maximum allowed ({MAX_RANGE})"),
        ));
    }
    list_of(
        (0..n)
            .map(|i| Box::new(CelInt::from(i)) as Box<dyn Val + 'v>)
            .collect(),
    )
}
