//! Kubernetes' regex library (`library.Regex`): `find` and `findAll` on
//! strings, RE2 syntax (the `regex` crate's, which is RE2's less a few
//! rarely used forms). Also the standard library's `matches`: the `cel`
//! crate's compiles its pattern on every call (14 µs for a short one), so it
//! is built without it and `matches` shares this module's pattern cache.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::types::{CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;

use super::{Args, Ret, error, int_arg, member, string, string_arg};

pub(crate) const DECLARATIONS: &[&str] = &[
    "[string].find(string) -> string",
    "[string].findAll(string) -> list(string)",
    "[string].findAll(string, int) -> list(string)",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    super::global(
        env,
        "matches",
        "matches",
        vec![STRING_TYPE, STRING_TYPE],
        matches,
    )?;
    member(
        env,
        "matches",
        "matches_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        matches,
    )?;
    member(
        env,
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    member(
        env,
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    member(
        env,
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    Ok(())
}

/// Compiled patterns, as rules use a few constant ones over and over; shared
/// by `Arc` (a cloned `Regex` would start with an empty matching cache).
static CACHE: LazyLock<Mutex<HashMap<String, Arc<Regex>>>> = LazyLock::new(Default::default);
const CACHE_SIZE: usize = 256;

fn compile(function: &str, pattern: &str) -> Result<Arc<Regex>, ExecutionError> {
    if let Ok(cache) = CACHE.lock()
        && let Some(re) = cache.get(pattern)
    {
        return Ok(re.clone());
    }
    let re =
        Arc::new(Regex::new(pattern).map_err(|e| error(function, format!("Illegal regex: {e}")))?);
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= CACHE_SIZE {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), re.clone());
    }
    Ok(re)
}

fn matches<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0)?;
    let re = compile("matches", string_arg(&args, 1)?)?;
    super::boolean(re.is_match(s))
}

fn find<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, 0)?;
    let re = compile("find", string_arg(&args, 1)?)?;
    string(re.find(s).map_or("", |m| m.as_str()))
}

fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    all(&args, -1)
}

fn find_all_n<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let n = int_arg(&args, 2)?;
    all(&args, n)
}

/// At most `n` matches, all when `n` is negative, as Go's `FindAllString`.
fn all<'b, 'v>(args: &Args<'_, '_>, n: i64) -> Ret<'b, 'v> {
    let s = string_arg(args, 0)?;
    let re = compile("findAll", string_arg(args, 1)?)?;
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    let items: Vec<Box<dyn Val + 'v>> = re
        .find_iter(s)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_owned())) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(items)))
}
