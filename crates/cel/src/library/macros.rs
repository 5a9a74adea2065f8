//! cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`, in the
//! base environment since 1.32): `all(i, v, p)`, `exists(i, v, p)`,
//! `existsOne(i, v, p)`, `transformList(i, v, [filter,] e)`,
//! `transformMap(k, v, [filter,] e)` and `transformMapEntry(k, v, [filter,]
//! e)`, on lists (index, element) and maps (key, value).
//!
//! The crate's interpreter binds one iteration variable only, so each is
//! expanded into a one-variable comprehension over `@kubext_entries(x)`, the
//! `[i, v]` pairs of `x`, whose step binds `i` and `v` with a bind
//! comprehension, as `cel.bind` is expanded.
//!
//! Also the lists extension's `sortBy(v, key)` (`ext.Lists`, in the base
//! environment since 1.34; [`super::ext_lists`]): expanded as cel-go expands
//! it, into `@__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(v,
//! key))` with `@__sortBy_input__` bound to the list, so that the list is
//! evaluated once.
//!
//! `cel.bind` itself is not in kube-apiserver's base environment (cel-go's
//! `ext.Bindings` isn't): [`cel_bind`] is the macro, for an environment that
//! wants it, and [`register`] doesn't add it.

use std::collections::HashMap;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, LiteralValue, MapExpr,
    operators,
};
use cel::common::types::{CelInt, CelList, CelMap, CelMapKey, DYN_TYPE, Kind, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, error, global, nth};

/// `[[i, v], ...]` for a list, `[[k, v], ...]` for a map.
pub(crate) const ENTRIES: &str = "@kubext_entries";
/// `@kubext_map_insert(m, k, v)`, and `@kubext_map_insert(m, entries)`.
const MAP_INSERT: &str = "@kubext_map_insert";
pub(crate) const ITEM: &str = "@kubext_it";
const RESULT: &str = "@result";
/// The variable `sortBy` binds its list to.
const SORT_BY_INPUT: &str = "@__sortBy_input__";

/// The internal functions' declarations: the pairs are `[index or key,
/// value]`, so the checker sees both variables as dyn.
pub const DECLARATIONS: &[&str] = &[
    "@kubext_entries(dyn) -> list(list(dyn))",
    "@kubext_map_insert(map(dyn, dyn), dyn, dyn) -> map(dyn, dyn)",
    "@kubext_map_insert(map(dyn, dyn), map(dyn, dyn)) -> map(dyn, dyn)",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    global(env, ENTRIES, "kubext_entries", vec![DYN_TYPE], entries)?;
    global(
        env,
        MAP_INSERT,
        "kubext_map_insert_kv",
        vec![MAP_TYPE, DYN_TYPE, DYN_TYPE],
        map_insert,
    )?;
    global(
        env,
        MAP_INSERT,
        "kubext_map_insert_map",
        vec![MAP_TYPE, MAP_TYPE],
        map_merge,
    )?;
    env.add_macro(Macro::receiver("all", 3, |h, t, a| {
        expand(h, t, a, Kind2::All)
    }))?;
    env.add_macro(Macro::receiver("exists", 3, |h, t, a| {
        expand(h, t, a, Kind2::Exists)
    }))?;
    env.add_macro(Macro::receiver("existsOne", 3, |h, t, a| {
        expand(h, t, a, Kind2::ExistsOne)
    }))?;
    for (name, kind) in [
        ("transformList", Kind2::TransformList),
        ("transformMap", Kind2::TransformMap),
        ("transformMapEntry", Kind2::TransformMapEntry),
    ] {
        env.add_macro(Macro::receiver(name, 3, move |h, t, a| {
            expand(h, t, a, kind)
        }))?;
        env.add_macro(Macro::receiver(name, 4, move |h, t, a| {
            expand(h, t, a, kind)
        }))?;
    }
    env.add_macro(Macro::receiver("sortBy", 2, sort_by))?;
    Ok(())
}

/// `cel.bind(name, init, expr)`: `expr` with `name` bound to `init`.
pub fn cel_bind() -> Macro {
    Macro::receiver("bind", 3, |helper, target, args| {
        if !matches!(&target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
            return Ok(None);
        }
        let body = args.pop().unwrap_or_default();
        let init = args.pop().unwrap_or_default();
        let name = simple_name(helper, args.pop().unwrap_or_default())?;
        target.take();
        Ok(Some(bind(helper, name, init, body)))
    })
}

/// `list.sortBy(v, key)`: the list ordered by each element's `key` (with
/// `v` bound to the element).
fn sort_by(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let list = target.take().unwrap_or_default();
    if matches!(
        list.expr,
        Expr::Literal(_) | Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified
    ) {
        return Err(h.new_error(
            list.id,
            "sortBy can only be applied to a list, identifier, comprehension, call or select expression",
        ));
    }
    let key = args.pop().unwrap_or_default();
    let var = args.pop().unwrap_or_default();
    let Expr::Ident(var) = var.expr else {
        return Err(h.new_error(var.id, "argument is not an identifier"));
    };
    // `@__sortBy_input__.map(var, key)`.
    let accumulated = ident(h, RESULT);
    let item = expr(h, Expr::List(ListExpr::new(vec![key])));
    let step = call(h, operators::ADD, vec![accumulated, item]);
    let keys = ComprehensionExpr {
        iter_range: ident(h, SORT_BY_INPUT),
        iter_var: var,
        iter_var2: None,
        accu_var: RESULT.to_owned(),
        accu_init: expr(h, Expr::List(ListExpr::new(Vec::new()))),
        loop_cond: boolean(h, true),
        loop_step: step,
        result: ident(h, RESULT),
    };
    let keys = expr(h, Expr::Comprehension(Box::new(keys)));
    let input = ident(h, SORT_BY_INPUT);
    let sorted = expr(
        h,
        Expr::Call(CallExpr {
            func_name: super::ext_lists::SORT_BY_KEYS.to_owned(),
            target: Some(Box::new(input)),
            args: vec![keys],
        }),
    );
    Ok(Some(bind(h, SORT_BY_INPUT.to_owned(), list, sorted)))
}

#[derive(Clone, Copy)]
enum Kind2 {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

fn expr(h: &mut MacroExprHelper<'_>, e: Expr) -> IdedExpr {
    h.next_expr(e)
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    expr(h, Expr::Ident(name.to_owned()))
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    expr(
        h,
        Expr::Call(CallExpr {
            func_name: name.to_owned(),
            target: None,
            args,
        }),
    )
}

fn boolean(h: &mut MacroExprHelper<'_>, b: bool) -> IdedExpr {
    expr(h, Expr::Literal(LiteralValue::Boolean(b.into())))
}

fn integer(h: &mut MacroExprHelper<'_>, i: i64) -> IdedExpr {
    expr(h, Expr::Literal(LiteralValue::Int(i.into())))
}

fn simple_name(h: &mut MacroExprHelper<'_>, e: IdedExpr) -> Result<String, ParseError> {
    match e.expr {
        Expr::Ident(name) => Ok(name),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

/// `body` with `name` bound to `init`: a comprehension over nothing whose
/// accumulator is `name`.
fn bind(h: &mut MacroExprHelper<'_>, name: String, init: IdedExpr, body: IdedExpr) -> IdedExpr {
    let comprehension = ComprehensionExpr {
        iter_range: expr(h, Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        loop_step: ident(h, &name),
        accu_var: name,
        accu_init: init,
        loop_cond: boolean(h, false),
        result: body,
    };
    expr(h, Expr::Comprehension(Box::new(comprehension)))
}

/// `e` with the two variables bound to the current entry.
fn with_vars(h: &mut MacroExprHelper<'_>, first: &str, second: &str, e: IdedExpr) -> IdedExpr {
    let item = ident(h, ITEM);
    let one = integer(h, 1);
    let value = call(h, operators::INDEX, vec![item, one]);
    let inner = bind(h, second.to_owned(), value, e);
    let item = ident(h, ITEM);
    let zero = integer(h, 0);
    let key = call(h, operators::INDEX, vec![item, zero]);
    bind(h, first.to_owned(), key, inner)
}

fn expand(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    kind: Kind2,
) -> Result<Option<IdedExpr>, ParseError> {
    let mut rest = args.split_off(2);
    let second = simple_name(h, args.pop().unwrap_or_default())?;
    let first = simple_name(h, args.pop().unwrap_or_default())?;
    let id = h.next_expr(Expr::Unspecified).id;
    if first == second {
        return Err(h.new_error(id, format!("duplicate variable name: {first}")));
    }
    let range = target.take().unwrap_or_default();
    let range = call(h, ENTRIES, vec![range]);
    let body = rest.pop().unwrap_or_default();
    let filter = rest.pop();
    let body = with_vars(h, &first, &second, body);
    let filter = filter.map(|f| with_vars(h, &first, &second, f));

    let accu = |h: &mut MacroExprHelper<'_>| ident(h, RESULT);
    let (init, cond, step, result) = match kind {
        Kind2::All => {
            let a = accu(h);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![a]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_AND, vec![a, body]);
            (boolean(h, true), cond, step, accu(h))
        }
        Kind2::Exists => {
            let a = accu(h);
            let not = call(h, operators::LOGICAL_NOT, vec![a]);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![not]);
            let a = accu(h);
            let step = call(h, operators::LOGICAL_OR, vec![a, body]);
            (boolean(h, false), cond, step, accu(h))
        }
        Kind2::ExistsOne => {
            let a = accu(h);
            let one = integer(h, 1);
            let plus = call(h, operators::ADD, vec![a, one]);
            let a = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![body, plus, a]);
            let a = accu(h);
            let one = integer(h, 1);
            let result = call(h, operators::EQUALS, vec![a, one]);
            (integer(h, 0), boolean(h, true), step, result)
        }
        Kind2::TransformList => {
            let a = accu(h);
            let item = expr(h, Expr::List(ListExpr::new(vec![body])));
            let append = call(h, operators::ADD, vec![a, item]);
            let step = guarded(h, filter, append);
            (
                expr(h, Expr::List(ListExpr::new(Vec::new()))),
                boolean(h, true),
                step,
                accu(h),
            )
        }
        Kind2::TransformMap => {
            let a = accu(h);
            let item = ident(h, ITEM);
            let zero = integer(h, 0);
            let key_init = call(h, operators::INDEX, vec![item, zero]);
            let insert = call(h, MAP_INSERT, vec![a, key_init, body]);
            let step = guarded(h, filter, insert);
            (empty_map(h), boolean(h, true), step, accu(h))
        }
        Kind2::TransformMapEntry => {
            let a = accu(h);
            let insert = call(h, MAP_INSERT, vec![a, body]);
            let step = guarded(h, filter, insert);
            (empty_map(h), boolean(h, true), step, accu(h))
        }
    };
    let comprehension = ComprehensionExpr {
        iter_range: range,
        iter_var: ITEM.to_owned(),
        iter_var2: None,
        accu_var: RESULT.to_owned(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    };
    Ok(Some(expr(h, Expr::Comprehension(Box::new(comprehension)))))
}

fn empty_map(h: &mut MacroExprHelper<'_>) -> IdedExpr {
    let entries: Vec<IdedEntryExpr> = Vec::new();
    expr(h, Expr::Map(MapExpr { entries }))
}

/// `filter ? step : @result`, or `step` without a filter.
fn guarded(h: &mut MacroExprHelper<'_>, filter: Option<IdedExpr>, step: IdedExpr) -> IdedExpr {
    match filter {
        None => step,
        Some(f) => {
            let a = ident(h, RESULT);
            call(h, operators::CONDITIONAL, vec![f, step, a])
        }
    }
}

// ---------------------------------------------------------------------------
// The internal functions the expansions call.
// ---------------------------------------------------------------------------

fn pair<'v>(k: Box<dyn Val + 'v>, v: Box<dyn Val + 'v>) -> Box<dyn Val + 'v> {
    Box::new(CelList::from(vec![k, v]))
}

fn entries<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let range = nth(&args, 0)?;
    let mut out: Vec<Box<dyn Val + 'v>> = Vec::new();
    if range.get_type().kind() == Kind::Map {
        let map = range
            .downcast_ref::<CelMap>()
            .ok_or_else(|| error("comprehension", "unsupported map"))?;
        for (k, v) in map.inner() {
            out.push(pair(k.inner().clone_as_boxed(), v.clone_as_boxed()));
        }
    } else {
        let mut items = range
            .as_iterable()
            .ok_or_else(|| ExecutionError::UnexpectedType {
                got: range.get_type().name().to_owned(),
                want: "list or map".to_owned(),
            })?
            .iter();
        let mut i = 0i64;
        while let Some(item) = items.next() {
            out.push(pair(Box::new(CelInt::from(i)), item.clone_as_boxed()));
            i += 1;
        }
    }
    Ok(CowVal::owned(CelList::from(out)))
}

fn map_entries<'v>(
    map: &(dyn Val + 'v),
) -> Result<HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>, ExecutionError> {
    let map = map
        .downcast_ref::<CelMap>()
        .ok_or_else(|| error("comprehension", "unsupported map"))?;
    Ok(map
        .inner()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone_as_boxed()))
        .collect())
}

fn insert<'v>(
    map: &mut HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>,
    key: Box<dyn Val + 'v>,
    value: Box<dyn Val + 'v>,
) -> Result<(), ExecutionError> {
    let shown = format!("{key:?}");
    let key = CelMapKey::try_from(key)?;
    if map.contains_key(&key) {
        return Err(error(
            "transformMapEntry",
            format!("insert failed: key {shown} already exists"),
        ));
    }
    map.insert(key, value);
    Ok(())
}

fn map_insert<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut map = map_entries(nth(&args, 0)?)?;
    insert(
        &mut map,
        nth(&args, 1)?.clone_as_boxed(),
        nth(&args, 2)?.clone_as_boxed(),
    )?;
    Ok(CowVal::owned(CelMap::from(map)))
}

fn map_merge<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut map = map_entries(nth(&args, 0)?)?;
    for (k, v) in map_entries(nth(&args, 1)?)? {
        insert(&mut map, k.inner().clone_as_boxed(), v)?;
    }
    Ok(CowVal::owned(CelMap::from(map)))
}
