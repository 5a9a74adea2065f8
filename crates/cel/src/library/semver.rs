//! Kubernetes' semver library (`library.SemverLib`, version 1, in the base
//! environment since 1.33, for new expressions since 1.36): `semver(s)`,
//! `semver(s, normalize)`, `isSemver` likewise, and the members of
//! `kubernetes.Semver`, parsing as `blang/semver/v4` does.

use std::cmp::Ordering;

use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env, ExecutionError};

use super::{
    Args, Ret, bool_arg, boolean, error, global, int, member, opaque, opaque_arg, opaque_type,
    string_arg,
};

const SEMVER: &str = "kubernetes.Semver";

pub(crate) const DECLARATIONS: &[&str] = &[
    "semver(string) -> kubernetes.Semver",
    "semver(string, bool) -> kubernetes.Semver",
    "isSemver(string) -> bool",
    "isSemver(string, bool) -> bool",
    "[kubernetes.Semver].isGreaterThan(kubernetes.Semver) -> bool",
    "[kubernetes.Semver].isLessThan(kubernetes.Semver) -> bool",
    "[kubernetes.Semver].compareTo(kubernetes.Semver) -> int",
    "[kubernetes.Semver].major() -> int",
    "[kubernetes.Semver].minor() -> int",
    "[kubernetes.Semver].patch() -> int",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let v = || opaque_type(SEMVER);
    global(
        env,
        "semver",
        "string_to_semver",
        vec![STRING_TYPE],
        to_semver,
    )?;
    global(
        env,
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver_normalize,
    )?;
    global(
        env,
        "isSemver",
        "is_semver_string",
        vec![STRING_TYPE],
        is_semver,
    )?;
    global(
        env,
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver_normalize,
    )?;
    member(env, "major", "semver_major", v(), vec![], major)?;
    member(env, "minor", "semver_minor", v(), vec![], minor)?;
    member(env, "patch", "semver_patch", v(), vec![], patch)?;
    super::register_comparisons::<Semver>(env)?;
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

/// A `kubernetes.Semver`; equal to another of the same precedence (build
/// metadata ignored), as `Version.EQ`.
#[derive(Clone, Debug)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

impl PartialEq for Semver {
    fn eq(&self, other: &Semver) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl cel::objects::Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        SEMVER
    }
}

impl Semver {
    fn compare(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a, b) {
                (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
                (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
                (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Str(a), Pre::Str(b)) => a.cmp(b),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn numeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` error.
fn parse_uint(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        if s.is_empty() || !numeric(s) {
            format!("strconv.ParseUint: parsing {s:?}: invalid syntax")
        } else {
            format!("strconv.ParseUint: parsing {s:?}: value out of range")
        }
    })
}

/// `semver.Parse`.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts.as_slice() else {
        return Err("No Major.Minor.Patch elements found".to_owned());
    };
    let number = |part: &str, what: &str, capital: &str| -> Result<u64, String> {
        if !numeric(part) {
            return Err(format!(
                "Invalid character(s) found in {what} number {part:?}"
            ));
        }
        if leading_zero(part) {
            return Err(format!(
                "{capital} number must not contain leading zeroes {part:?}"
            ));
        }
        parse_uint(part)
    };
    let major = number(major, "major", "Major")?;
    let minor = number(minor, "minor", "Minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (*rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((p, pre)) => (p, Some(pre)),
        None => (rest, None),
    };
    let patch = number(patch, "patch", "Patch")?;
    let mut prerelease = Vec::new();
    for p in pre
        .map(|p| p.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if p.is_empty() {
            return Err("Prerelease is empty".to_owned());
        }
        if numeric(p) {
            if leading_zero(p) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {p:?}"
                ));
            }
            prerelease.push(Pre::Num(parse_uint(p)?));
        } else if alphanumeric(p) {
            prerelease.push(Pre::Str(p.to_owned()));
        } else {
            return Err(format!("Invalid character(s) found in prerelease {p:?}"));
        }
    }
    for b in build
        .map(|b| b.split('.').collect::<Vec<_>>())
        .unwrap_or_default()
    {
        if b.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !alphanumeric(b) {
            return Err(format!(
                "Invalid character(s) found in build meta data {b:?}"
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre: prerelease,
    })
}

/// Upstream's `normalizeAndParse`: no `v` prefix, leading zeros dropped,
/// missing minor and patch filled in.
fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_owned()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        parts.resize(3, "0".to_owned());
    }
    parse(&parts.join("."))
}

fn parse_with(s: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        normalize_and_parse(s)
    } else {
        parse(s)
    }
}

fn semver_arg(args: &Args<'_, '_>, i: usize) -> Result<Semver, ExecutionError> {
    opaque_arg::<Semver>(args, i, SEMVER)
}

fn to_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    opaque(parse_with(string_arg(&args, 0)?, false).map_err(|e| error("semver", e))?)
}

fn to_semver_normalize<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let normalize = bool_arg(&args, 1)?;
    opaque(parse_with(string_arg(&args, 0)?, normalize).map_err(|e| error("semver", e))?)
}

fn is_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(parse_with(string_arg(&args, 0)?, false).is_ok())
}

fn is_semver_normalize<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let normalize = bool_arg(&args, 1)?;
    boolean(parse_with(string_arg(&args, 0)?, normalize).is_ok())
}

fn component(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn major<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(component(semver_arg(&args, 0)?.major))
}

fn minor<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(component(semver_arg(&args, 0)?.minor))
}

fn patch<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    int(component(semver_arg(&args, 0)?.patch))
}

impl super::Ordered for Semver {
    const TYPE: &'static str = SEMVER;
    const PREFIX: &'static str = "semver";
    fn order(&self, other: &Self) -> Ordering {
        self.compare(other)
    }
}
