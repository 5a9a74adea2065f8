//! Function declarations for the checker, written in a compact notation:
//! `name(T1, T2) -> R` for a global function, `[R].name(T1) -> R` for a
//! member one; types as `Type`'s display (`list(A)`, `map(K, V)`,
//! `optional(T)`, opaque `net.IP`), single capitals as type parameters.
//! The standard library's and the strings extension's are here; Kubernetes'
//! libraries declare theirs next to their code (`crate::library`).

use std::collections::HashMap;

use crate::types::Type;

/// One overload.
#[derive(Debug, Clone)]
pub struct Overload {
    pub receiver: Option<Type>,
    pub args: Vec<Type>,
    pub result: Type,
}

/// Every declared function's overloads, by name.
#[derive(Debug, Default)]
pub struct Declarations {
    functions: HashMap<String, Vec<Overload>>,
}

impl Declarations {
    /// The standard library, the strings extension and Kubernetes' libraries.
    pub fn kubernetes() -> Declarations {
        let mut d = Declarations::default();
        for line in STANDARD
            .iter()
            .copied()
            .chain(crate::library::declarations())
        {
            // Declarations are this crate's own constants; the tests parse
            // every one.
            if let Some((name, overload)) = parse(line) {
                d.functions.entry(name).or_default().push(overload);
            }
        }
        for (name, overload) in comparisons() {
            d.functions.entry(name).or_default().push(overload);
        }
        d
    }

    /// What new expressions may use: kube-apiserver 1.37 compiles them in
    /// the environment of its minimum compatibility version, 1.36's, so what
    /// 1.37 added (`library::STORED_ONLY`, the lists library's `includes`)
    /// is only for expressions already stored.
    pub fn for_new_expressions() -> Declarations {
        let mut d = Declarations::kubernetes();
        for name in crate::library::STORED_ONLY {
            d.functions.remove(*name);
        }
        d
    }

    /// Whether some function is named `<namespace>.…` (`sets.contains`).
    pub fn has_namespace(&self, namespace: &str) -> bool {
        self.functions.keys().any(|name| {
            name.strip_prefix(namespace)
                .is_some_and(|rest| rest.starts_with('.'))
        })
    }

    pub fn overloads(&self, name: &str) -> Option<&[Overload]> {
        self.functions.get(name).map(Vec::as_slice)
    }
}

/// `<`, `<=`, `>`, `>=` on each ordered type, and across numeric types
/// (kube-apiserver's environment allows `1 < 1.5`).
fn comparisons() -> impl Iterator<Item = (String, Overload)> {
    const ORDERED: &[&str] = &[
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "timestamp",
        "duration",
    ];
    const NUMERIC: &[&str] = &["int", "uint", "double"];
    let pairs = ORDERED
        .iter()
        .map(|t| (*t, *t))
        .chain(NUMERIC.iter().flat_map(|a| {
            NUMERIC
                .iter()
                .filter(move |b| *b != a)
                .map(move |b| (*a, *b))
        }))
        .collect::<Vec<_>>();
    ["_<_", "_<=_", "_>_", "_>=_"]
        .into_iter()
        .flat_map(move |op| {
            pairs
                .clone()
                .into_iter()
                .filter_map(move |(a, b)| parse(&format!("{op}({a}, {b}) -> bool")))
        })
}

/// Parses one declaration; `None` when it is malformed.
pub fn parse(line: &str) -> Option<(String, Overload)> {
    let (head, result) = line.split_once(" -> ")?;
    let result = parse_type(result.trim())?;
    let (receiver, rest) = match head.strip_prefix('[') {
        Some(after) => {
            let close = matching(after, '[', ']')?;
            let receiver = parse_type(&after[..close])?;
            let rest = after[close + 1..].strip_prefix('.')?;
            (Some(receiver), rest)
        }
        None => (None, head),
    };
    let open = rest.find('(')?;
    let name = rest[..open].to_string();
    let inner = rest[open + 1..].strip_suffix(')')?;
    let args = split_top_level(inner)
        .into_iter()
        .map(parse_type)
        .collect::<Option<Vec<_>>>()?;
    Some((
        name,
        Overload {
            receiver,
            args,
            result,
        },
    ))
}

/// The index in `s` of the `close` that matches an already opened `open`.
fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// `a, list(b), map(c, d)` → its three parts.
fn split_top_level(s: &str) -> Vec<&str> {
    let s = s.trim();
    if s.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim());
    parts
}

fn parse_type(s: &str) -> Option<Type> {
    let s = s.trim();
    if let Some(open) = s.find('(') {
        let inner = s[open + 1..].strip_suffix(')')?;
        let mut parts = split_top_level(inner).into_iter().map(parse_type);
        let t = match &s[..open] {
            "list" => Type::list(parts.next()??),
            "map" => Type::map(parts.next()??, parts.next()??),
            "optional" => Type::optional(parts.next()??),
            _ => return None,
        };
        return parts.next().is_none().then_some(t);
    }
    Some(match s {
        "bool" => Type::Bool,
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null" => Type::Null,
        "duration" => Type::Duration,
        "timestamp" => Type::Timestamp,
        "dyn" => Type::Dyn,
        "type" => Type::Kind,
        p if p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase()) => {
            Type::Param(p.chars().next()?)
        }
        opaque if opaque.contains('.') => Type::Opaque(opaque.to_string()),
        _ => return None,
    })
}

/// CEL's standard library (cel-go's checker declarations) and the strings
/// extension (version 2, as kube-apiserver's base environment).
pub const STANDARD: &[&str] = &[
    // Logic.
    "!_(bool) -> bool",
    "_&&_(bool, bool) -> bool",
    "_||_(bool, bool) -> bool",
    "_?_:_(bool, A, A) -> A",
    "@not_strictly_false(bool) -> bool",
    // Equality and membership.
    "_==_(A, A) -> bool",
    "_!=_(A, A) -> bool",
    "@in(A, list(A)) -> bool",
    "@in(K, map(K, V)) -> bool",
    // Arithmetic.
    "_+_(int, int) -> int",
    "_+_(uint, uint) -> uint",
    "_+_(double, double) -> double",
    "_+_(string, string) -> string",
    "_+_(bytes, bytes) -> bytes",
    "_+_(list(A), list(A)) -> list(A)",
    "_+_(timestamp, duration) -> timestamp",
    "_+_(duration, timestamp) -> timestamp",
    "_+_(duration, duration) -> duration",
    "_-_(int, int) -> int",
    "_-_(uint, uint) -> uint",
    "_-_(double, double) -> double",
    "_-_(timestamp, timestamp) -> duration",
    "_-_(timestamp, duration) -> timestamp",
    "_-_(duration, duration) -> duration",
    "_*_(int, int) -> int",
    "_*_(uint, uint) -> uint",
    "_*_(double, double) -> double",
    "_/_(int, int) -> int",
    "_/_(uint, uint) -> uint",
    "_/_(double, double) -> double",
    "_%_(int, int) -> int",
    "_%_(uint, uint) -> uint",
    "-_(int) -> int",
    "-_(double) -> double",
    // Indexing.
    "_[_](list(A), int) -> A",
    "_[_](map(K, V), K) -> V",
    "_[?_](list(A), int) -> optional(A)",
    "_[?_](map(K, V), K) -> optional(V)",
    "_[?_](optional(list(A)), int) -> optional(A)",
    "_[?_](optional(map(K, V)), K) -> optional(V)",
    // Size.
    "size(string) -> int",
    "size(bytes) -> int",
    "size(list(A)) -> int",
    "size(map(K, V)) -> int",
    "[string].size() -> int",
    "[bytes].size() -> int",
    "[list(A)].size() -> int",
    "[map(K, V)].size() -> int",
    // Conversions.
    "int(int) -> int",
    "int(uint) -> int",
    "int(double) -> int",
    "int(string) -> int",
    "int(timestamp) -> int",
    "int(duration) -> int",
    "uint(uint) -> uint",
    "uint(int) -> uint",
    "uint(double) -> uint",
    "uint(string) -> uint",
    "double(double) -> double",
    "double(int) -> double",
    "double(uint) -> double",
    "double(string) -> double",
    "string(string) -> string",
    "string(int) -> string",
    "string(uint) -> string",
    "string(double) -> string",
    "string(bool) -> string",
    "string(bytes) -> string",
    "string(timestamp) -> string",
    "string(duration) -> string",
    "bytes(bytes) -> bytes",
    "bytes(string) -> bytes",
    "bool(bool) -> bool",
    "bool(string) -> bool",
    "duration(duration) -> duration",
    "duration(string) -> duration",
    "timestamp(timestamp) -> timestamp",
    "timestamp(string) -> timestamp",
    "timestamp(int) -> timestamp",
    "dyn(A) -> dyn",
    "type(A) -> type",
    // Strings.
    "[string].contains(string) -> bool",
    "[string].endsWith(string) -> bool",
    "[string].startsWith(string) -> bool",
    "[string].matches(string) -> bool",
    "matches(string, string) -> bool",
    // Time.
    "[timestamp].getFullYear() -> int",
    "[timestamp].getFullYear(string) -> int",
    "[timestamp].getMonth() -> int",
    "[timestamp].getMonth(string) -> int",
    "[timestamp].getDate() -> int",
    "[timestamp].getDate(string) -> int",
    "[timestamp].getDayOfMonth() -> int",
    "[timestamp].getDayOfMonth(string) -> int",
    "[timestamp].getDayOfWeek() -> int",
    "[timestamp].getDayOfWeek(string) -> int",
    "[timestamp].getDayOfYear() -> int",
    "[timestamp].getDayOfYear(string) -> int",
    "[timestamp].getHours() -> int",
    "[timestamp].getHours(string) -> int",
    "[timestamp].getMinutes() -> int",
    "[timestamp].getMinutes(string) -> int",
    "[timestamp].getSeconds() -> int",
    "[timestamp].getSeconds(string) -> int",
    "[timestamp].getMilliseconds() -> int",
    "[timestamp].getMilliseconds(string) -> int",
    "[duration].getHours() -> int",
    "[duration].getMinutes() -> int",
    "[duration].getSeconds() -> int",
    "[duration].getMilliseconds() -> int",
    // Optionals.
    "optional.of(A) -> optional(A)",
    "optional.ofNonZeroValue(A) -> optional(A)",
    "optional.none() -> optional(A)",
    "[optional(A)].hasValue() -> bool",
    "[optional(A)].value() -> A",
    "[optional(A)].or(optional(A)) -> optional(A)",
    "[optional(A)].orValue(A) -> A",
    // The strings extension.
    "[string].charAt(int) -> string",
    "[string].indexOf(string) -> int",
    "[string].indexOf(string, int) -> int",
    "[string].lastIndexOf(string) -> int",
    "[string].lastIndexOf(string, int) -> int",
    "[string].lowerAscii() -> string",
    "[string].upperAscii() -> string",
    "[string].replace(string, string) -> string",
    "[string].replace(string, string, int) -> string",
    "[string].split(string) -> list(string)",
    "[string].split(string, int) -> list(string)",
    "[string].substring(int) -> string",
    "[string].substring(int, int) -> string",
    "[string].trim() -> string",
    "[list(string)].join() -> string",
    "[list(string)].join(string) -> string",
    "[string].format(list(dyn)) -> string",
    "strings.quote(string) -> string",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declaration_parses() {
        for line in STANDARD
            .iter()
            .copied()
            .chain(crate::library::declarations())
        {
            assert!(parse(line).is_some(), "{line}");
        }
    }

    #[test]
    fn the_notation_reads_members_and_parameters() {
        let (name, o) = parse("[map(K, V)].size() -> int").unwrap();
        assert_eq!(name, "size");
        assert_eq!(o.receiver.unwrap().to_string(), "map(K, V)");
        let (name, o) = parse("format.dns1123Label() -> kubernetes.NamedFormat").unwrap();
        assert_eq!(name, "format.dns1123Label");
        assert_eq!(o.result.to_string(), "kubernetes.NamedFormat");
        assert!(parse("f(list(int) -> int").is_none());
    }
}
