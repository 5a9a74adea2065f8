//! Rules of the code base that no compiler checks: each crate depends only on the
//! crates ARCHITECTURE.md allows it, every source file says what it is for,
//! the hot-path modules ARCHITECTURE.md names are marked and keep its rules,
//! public signatures give their errors a type (no `Result<_, String>`), the
//! modules of a crate do not import each other in a cycle, and objects'
//! `metadata` is read through the object model, not as raw JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// `crate → allowed internal dependencies`, from ARCHITECTURE.md's table.
fn allowed_dependencies(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut rules = BTreeMap::new();
    let mut in_table = false;
    for line in architecture.lines() {
        if line.starts_with("| crate | may depend on |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("|---") {
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            break;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let allowed = cells[1]
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect();
        rules.insert(cells[0].to_string(), allowed);
    }
    rules
}

/// `crate → internal normal dependencies`, from `cargo metadata`.
fn actual_dependencies(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let internal: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap())
                .filter(|name| internal.contains(name))
                .map(String::from)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn crates_depend_only_on_what_architecture_md_allows() {
    let root = workspace_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let allowed = allowed_dependencies(&architecture);
    let actual = actual_dependencies(&root);
    let mut problems = Vec::new();
    for (name, deps) in &actual {
        match allowed.get(name) {
            None => problems.push(format!("{name} has no row in ARCHITECTURE.md's table")),
            Some(rule) => {
                for dep in deps.difference(rule) {
                    problems.push(format!(
                        "{name} depends on {dep}, which ARCHITECTURE.md does not allow"
                    ));
                }
            }
        }
    }
    for name in allowed.keys().filter(|n| !actual.contains_key(*n)) {
        problems.push(format!(
            "ARCHITECTURE.md lists {name}, which is not in the workspace"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every library and binary source file of the workspace.
fn workspace_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for parent in ["crates", "examples"] {
        for member in std::fs::read_dir(root.join(parent)).unwrap() {
            let src = member.unwrap().path().join("src");
            if src.is_dir() {
                rust_sources(&src, &mut files);
            }
        }
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    files
}

#[test]
fn every_source_file_opens_with_a_doc_comment() {
    let root = workspace_root();
    let files = workspace_sources(&root);
    let undocumented: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert!(
        undocumented.is_empty(),
        "no `//!` doc comment: {undocumented:?}"
    );
}

/// The module doc line that marks a hot-path module.
const HOT_PATH_MARK: &str = "//! Hot path:";

/// What a hot-path module must not do (ARCHITECTURE.md's invariants): blocking
/// IO, sleeping a thread, compiling patterns per call, blocking on futures.
const HOT_PATH_FORBIDDEN: &[&str] = &["std::fs::", "thread::sleep", "Regex::new", "block_on("];

/// The files listed under ARCHITECTURE.md's "Hot-path modules" heading.
fn listed_hot_paths(architecture: &str) -> BTreeSet<String> {
    architecture
        .lines()
        .skip_while(|l| !l.starts_with("### Hot-path modules"))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .map(String::from)
        .collect()
}

#[test]
fn hot_path_modules_are_listed_marked_and_keep_the_rules() {
    let root = workspace_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let listed = listed_hot_paths(&architecture);
    assert!(listed.len() >= 5, "ARCHITECTURE.md lists {listed:?}");
    let mut marked = BTreeSet::new();
    let mut problems = Vec::new();
    for file in workspace_sources(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let header: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
        if !header.iter().any(|l| l.starts_with(HOT_PATH_MARK)) {
            continue;
        }
        // Test modules may do anything.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for forbidden in HOT_PATH_FORBIDDEN {
            if code.contains(forbidden) {
                problems.push(format!("{name}: a hot-path module uses `{forbidden}`"));
            }
        }
        marked.insert(name);
    }
    for name in listed.difference(&marked) {
        problems.push(format!(
            "{name} is listed as hot path but not marked `{HOT_PATH_MARK}`"
        ));
    }
    for name in marked.difference(&listed) {
        problems.push(format!(
            "{name} is marked hot path but not listed in ARCHITECTURE.md"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `unsafe` is denied workspace-wide, and one module may allow it: the counting
/// global allocator (`crates/kubext/src/heap.rs`), which cannot be written
/// without it.
#[test]
fn unsafe_code_is_allowed_only_for_the_global_allocator() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("unsafe_code = \"deny\""));
    let mut allowing = Vec::new();
    for file in workspace_sources(&root) {
        let code = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.contains("allow(unsafe_code)") {
                let name = file.strip_prefix(&root).unwrap().display().to_string();
                allowing.push(format!("{name}: {}", lines.get(i + 1).unwrap_or(&"")));
            }
        }
    }
    assert_eq!(allowing, ["crates/kubext/src/main.rs: mod heap;"]);
}

/// `code` with comments and the contents of string and char literals blanked
/// (same length, newlines kept), so braces and paths in them count for nothing.
fn code_only(code: &str) -> String {
    blank_code(code, true)
}

/// `code` with comments blanked and literals kept (same length, newlines
/// kept): for rules whose patterns are string literals.
fn without_comments(code: &str) -> String {
    blank_code(code, false)
}

/// `code` with comments blanked, and the contents of string and char
/// literals too when `literals` is true.
fn blank_code(code: &str, literals: bool) -> String {
    let bytes = code.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = code[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 4);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|b| **b == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let end = code[start..]
                .find(&close)
                .map_or(bytes.len(), |n| start + n + close.len());
            if literals {
                blank(&mut out, start, end.saturating_sub(close.len()));
            }
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            if literals {
                blank(&mut out, i + 1, j.min(bytes.len()));
            }
            i = j + 1;
        } else if rest[0] == b'\'' && (rest.get(1) == Some(&b'\\') || rest.get(2) == Some(&b'\'')) {
            // A char literal (`'{'`, `'\n'`), not a lifetime.
            let end = rest[2..]
                .iter()
                .position(|b| *b == b'\'')
                .map_or(bytes.len(), |n| i + n + 3);
            if literals {
                blank(&mut out, i + 1, end.saturating_sub(1));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The code of a source file that is not a test (comments and literals
/// blanked by [`code_only`]): files of test modules (`tests.rs`,
/// `*_tests.rs`) have none; in others, each `#[cfg(test)]` item is blanked
/// (up to its `;`, or through its braces).
fn non_test_code(file: &Path) -> String {
    non_test(file, true)
}

/// [`non_test_code`] with string and char literals kept (comments blanked):
/// the test items are found in the blanked code, then blanked in this.
fn non_test_code_with_literals(file: &Path) -> String {
    non_test(file, false)
}

fn non_test(file: &Path, blank_literals: bool) -> String {
    let name = file.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).unwrap();
    let mut code = code_only(&text).into_bytes();
    let mut kept = if blank_literals {
        None
    } else {
        Some(without_comments(&text).into_bytes())
    };
    let mark = b"#[cfg(test)]";
    let mut from = 0;
    while let Some(found) = code[from..].windows(mark.len()).position(|w| w == mark) {
        let start = from + found;
        let mut end = start + mark.len();
        let mut depth = 0;
        while end < code.len() {
            match code[end] {
                b';' if depth == 0 => break,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        let end = (end + 1).min(code.len());
        for out in [Some(&mut code), kept.as_mut()].into_iter().flatten() {
            for b in &mut out[start..end] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        from = end;
    }
    String::from_utf8(kept.unwrap_or(code)).unwrap()
}

/// Whether a type mentions `Result<…, String>`: a result whose error is only a
/// message (`Result<T>` aliases with one argument are not looked through).
fn has_string_error(signature: &str) -> bool {
    let mut from = 0;
    while let Some(found) = signature[from..].find("Result<") {
        let start = from + found + "Result<".len();
        from = start;
        let (mut depth, mut arguments, mut current) = (1, Vec::new(), String::new());
        let mut chars = signature[start..].chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '-' if chars.peek() == Some(&'>') => {
                    chars.next();
                    current.push_str("->");
                    continue;
                }
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 1 => {
                    arguments.push(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                break;
            }
            current.push(c);
        }
        arguments.push(current);
        if arguments.len() > 1
            && matches!(
                arguments.last().unwrap().trim(),
                "String" | "std::string::String"
            )
        {
            return true;
        }
    }
    false
}

/// The public items of `code` whose signature mentions `Result<…, String>`,
/// named `fn name`, `field name` or `type Name`: `pub` functions, methods of
/// `pub trait`s, `pub` struct fields and type aliases.
fn public_string_errors(code: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    let mut depth = 0i32;
    let mut trait_depth: Option<i32> = None;
    let word_after = |s: &str, prefix: &str| -> String {
        let rest = &s[s.find(prefix).unwrap() + prefix.len()..];
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (n, line) in lines.iter().enumerate() {
        let s = line.trim_start();
        let is_field = s.strip_prefix("pub ").is_some_and(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = rest[name.len()..].trim_start();
            !name.is_empty()
                && ![
                    "fn", "async", "const", "unsafe", "type", "struct", "enum", "trait", "mod",
                    "use", "static", "impl",
                ]
                .contains(&name.as_str())
                && after.starts_with(':')
                && !after.starts_with("::")
        });
        let is_pub_fn = [
            "pub fn ",
            "pub async fn ",
            "pub const fn ",
            "pub unsafe fn ",
        ]
        .iter()
        .any(|p| s.starts_with(p));
        let is_trait_method = trait_depth.is_some_and(|d| depth == d + 1)
            && (s.starts_with("fn ") || s.starts_with("async fn "));
        let item = if is_pub_fn || is_trait_method {
            Some(format!("fn {}", word_after(s, "fn ")))
        } else if s.starts_with("pub type ") {
            Some(format!("type {}", word_after(s, "type ")))
        } else if is_field {
            Some(format!("field {}", word_after(s, "pub ")))
        } else {
            None
        };
        if let Some(item) = item {
            // The signature: up to the body, the `;`, or (a field) the `,`.
            let mut signature = String::new();
            for next in &lines[n..] {
                signature.push_str(next);
                signature.push(' ');
                let end = next.trim_end();
                if end.ends_with('{') || end.ends_with(';') || (is_field && end.ends_with(',')) {
                    break;
                }
            }
            if has_string_error(&signature) {
                found.push(item);
            }
        }
        if s.starts_with("pub trait ") {
            trait_depth = Some(depth);
        }
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if trait_depth.is_some_and(|d| depth <= d) && !s.starts_with("pub trait ") {
            trait_depth = None;
        }
    }
    found
}

/// Public signatures still returning `Result<_, String>` (`file: item`).
/// Shrinking: registry, controllers, the runtime and server's handlers (and
/// server's config/authn/serviceaccounts/audit) are moving to typed errors
/// with their owners; remove an entry when its signature is typed (the test
/// fails on entries that no longer match).
const STRING_ERRORS_ALLOWED: &[&str] = &[];

#[test]
fn public_signatures_have_typed_errors() {
    let root = workspace_root();
    let mut found = BTreeSet::new();
    for file in workspace_sources(&root) {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        for item in public_string_errors(&non_test_code(&file)) {
            found.insert(format!("{name}: {item}"));
        }
    }
    let allowed: BTreeSet<String> = STRING_ERRORS_ALLOWED
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut problems: Vec<String> = found
        .difference(&allowed)
        .map(|f| format!("{f}: a public signature with `Result<_, String>`; give the error a type"))
        .collect();
    problems.extend(allowed.difference(&found).map(|a| {
        format!("{a}: allowed a `Result<_, String>` it no longer has; remove it from STRING_ERRORS_ALLOWED")
    }));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The module path of a source file under `src` (`lib.rs`, `main.rs`: the root).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        path.pop();
    }
    path
}

/// The paths a use tree names, from `text` after its first segment's start:
/// `a::b::{c, d::{e}}` → `a::b::c`, `a::b::d::e`.
fn use_tree_paths(text: &str) -> Vec<Vec<String>> {
    fn tree(chars: &[char], pos: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        loop {
            while chars.get(*pos).is_some_and(|c| c.is_whitespace()) {
                *pos += 1;
            }
            if chars.get(*pos) == Some(&'{') {
                *pos += 1;
                loop {
                    tree(chars, pos, &path, out);
                    while chars
                        .get(*pos)
                        .is_some_and(|c| c.is_whitespace() || *c == ',')
                    {
                        *pos += 1;
                    }
                    match chars.get(*pos) {
                        Some('}') => {
                            *pos += 1;
                            return;
                        }
                        None => return,
                        _ => {}
                    }
                }
            }
            let start = *pos;
            while chars
                .get(*pos)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                *pos += 1;
            }
            if *pos > start {
                path.push(chars[start..*pos].iter().collect());
            }
            if chars.get(*pos) == Some(&':') && chars.get(*pos + 1) == Some(&':') {
                *pos += 2;
                continue;
            }
            // Skip `as name`, `*` and what ends the path.
            while chars
                .get(*pos)
                .is_some_and(|c| !matches!(c, ',' | '}' | ';' | '(' | ')' | '<' | '\n'))
            {
                *pos += 1;
            }
            out.push(path);
            return;
        }
    }
    let chars: Vec<char> = text.chars().take(2000).collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, &[], &mut out);
    out
}

/// `module → modules it uses`, between siblings: a reference from `a::x` to
/// `b::y` (through `crate::`, `super::` or `self::`, in `use` lines or inline)
/// is an edge `a → b` under their common parent; references between a module
/// and its own ancestors or descendants are not edges.
fn module_graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_sources(src, &mut files);
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| !f.strip_prefix(src).unwrap().starts_with("bin"))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let module = module_path(src, file);
        let code = non_test_code(file);
        for head in ["crate::", "super::", "self::"] {
            for (at, _) in code.match_indices(head) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                    continue;
                }
                for path in use_tree_paths(&code[at..]) {
                    let mut segments = path.iter().map(String::as_str).peekable();
                    let mut target = match segments.next() {
                        Some("crate") => Vec::new(),
                        Some("self") => module.clone(),
                        _ => module[..module.len().saturating_sub(1)].to_vec(),
                    };
                    while segments.peek() == Some(&"super") {
                        segments.next();
                        target.pop();
                    }
                    for segment in segments {
                        let mut deeper = target.clone();
                        deeper.push(segment.to_string());
                        if !modules.contains(&deeper) {
                            break;
                        }
                        target = deeper;
                    }
                    let common = module
                        .iter()
                        .zip(&target)
                        .take_while(|(a, b)| a == b)
                        .count();
                    if common == module.len() || common == target.len() {
                        continue;
                    }
                    graph
                        .entry(module[..=common].to_vec())
                        .or_default()
                        .insert(target[..=common].to_vec());
                }
            }
        }
    }
    graph
}

/// The cycles of `graph`: its strongly connected components of two or more
/// modules (Tarjan's algorithm).
fn module_cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        cycles: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(member) = self.stack.pop() {
                    component.insert(member.join("::"));
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.cycles.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        cycles: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.cycles
}

/// Module cycles not cut yet (`crate directory`, the modules of the cycle): a
/// cycle found must lie within one. Shrinking: remove an entry when its cycle
/// is cut (the test fails on entries no cycle needs).
const MODULE_CYCLES_ALLOWED: &[(&str, &[&str])] = &[];

/// Sibling modules depend one way: a cycle means neither can be understood,
/// tested or moved without the other.
#[test]
fn modules_of_a_crate_do_not_import_in_a_cycle() {
    let root = workspace_root();
    let mut problems = Vec::new();
    let mut needed = BTreeSet::new();
    for parent in ["crates", "examples"] {
        for member in std::fs::read_dir(root.join(parent)).unwrap() {
            let dir = member.unwrap().path();
            let src = dir.join("src");
            if !src.is_dir() {
                continue;
            }
            let name = dir.strip_prefix(&root).unwrap().display().to_string();
            for cycle in module_cycles(&module_graph(&src)) {
                let allowed = MODULE_CYCLES_ALLOWED.iter().position(|(c, modules)| {
                    *c == name && cycle.iter().all(|m| modules.contains(&m.as_str()))
                });
                match allowed {
                    Some(i) => {
                        needed.insert(i);
                    }
                    None => problems.push(format!(
                        "{name}: the modules {cycle:?} import each other in a cycle"
                    )),
                }
            }
        }
    }
    for (i, (name, modules)) in MODULE_CYCLES_ALLOWED.iter().enumerate() {
        if !needed.contains(&i) {
            problems.push(format!(
                "{name}: {modules:?} no longer import in a cycle; remove it from MODULE_CYCLES_ALLOWED"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The object model: the modules that read and write an object's `metadata`
/// as JSON (`apimachinery::meta`'s accessors, the typed `ObjectMeta`, its
/// decoding and validation, the registry's encoding, object, managed fields
/// and apply) and the patch crate (whole documents by design). A path ending
/// in `/` is a directory.
const OBJECT_MODEL: &[&str] = &[
    "crates/apimachinery/src/meta.rs",
    "crates/apimachinery/src/meta_decode.rs",
    "crates/apimachinery/src/object_meta.rs",
    "crates/apimachinery/src/validation.rs",
    "crates/apimachinery/src/validation/",
    "crates/registry/src/apply.rs",
    "crates/registry/src/encoding.rs",
    "crates/registry/src/managed_fields.rs",
    "crates/registry/src/object.rs",
    "crates/patch/",
];

/// Raw access to `metadata` in code (comments blanked, literals kept):
/// `get`/`get_mut`/`entry` on the member.
const RAW_METADATA: &[&str] = &[
    r#".get("metadata")"#,
    r#".get_mut("metadata")"#,
    r#".entry("metadata")"#,
];

/// How many raw `metadata` accesses `code` has: [`RAW_METADATA`]'s, indexing
/// (`v["metadata"]`, `f()?["metadata"]`, `v["spec"]["metadata"]`; not a slice
/// literal such as a field path's `&["metadata"]`), and JSON pointers through
/// it (a `/metadata` segment in a literal: `"/metadata/name"` for `pointer`,
/// `pointer_mut`, helpers such as `str_at` and `format!`ed pointers, and nested
/// objects' `"/spec/template/metadata/labels"`).
fn raw_metadata_accesses(code: &str) -> usize {
    let called: usize = RAW_METADATA.iter().map(|p| code.matches(p).count()).sum();
    // What `[` indexes ends with: a name, a call, an index, a `?`, a block.
    let operand_end = |c: char| c.is_alphanumeric() || matches!(c, '_' | ')' | ']' | '?' | '}');
    let indexed = code
        .match_indices(r#"["metadata"]"#)
        .filter(|(at, _)| code[..*at].chars().next_back().is_some_and(operand_end))
        .count();
    let pointers = code
        .match_indices("/metadata")
        .filter(|(at, m)| matches!(code.as_bytes().get(at + m.len()), Some(b'/' | b'"')))
        .count();
    called + indexed + pointers
}

#[test]
fn raw_metadata_accesses_are_counted() {
    for (code, count) in [
        (r#"v["metadata"]["name"]"#, 1),
        (r#"v["spec"]["template"]["metadata"]"#, 1),
        (r#"f()?["metadata"]"#, 1),
        (r#"o.get("metadata").and_then(|m| m.get("labels"))"#, 1),
        (r#"o.get_mut("metadata")"#, 1),
        (r#"o.entry("metadata")"#, 1),
        (r#"o.pointer("/metadata/name")"#, 1),
        (r#"o.pointer("/spec/template/metadata")"#, 1),
        (r#"field_paths(&[&["metadata"], &["spec"]])"#, 0),
        (r#"o.pointer("/spec/metadataRef")"#, 0),
    ] {
        assert_eq!(raw_metadata_accesses(code), count, "{code}");
    }
}

/// Files still reading `metadata` as raw JSON outside the object model, with
/// how many accesses each has. Shrinking: use `apimachinery::meta`'s accessors
/// (on the nested object for a template's or a review's object) or a typed
/// `ObjectMeta`, and lower the count (the test fails on a count that grows
/// and on one that drops below its entry; remove an entry at zero).
const RAW_METADATA_ALLOWED: &[(&str, usize)] = &[];

/// Issue 35: no JSON-pointer access to `metadata` outside the object model.
#[test]
fn metadata_is_read_through_the_object_model() {
    let root = workspace_root();
    let mut found = BTreeMap::new();
    for file in workspace_sources(&root) {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        if OBJECT_MODEL
            .iter()
            .any(|m| name == *m || (m.ends_with('/') && name.starts_with(m)))
        {
            continue;
        }
        let count = raw_metadata_accesses(&non_test_code_with_literals(&file));
        if count > 0 {
            found.insert(name, count);
        }
    }
    let allowed: BTreeMap<String, usize> = RAW_METADATA_ALLOWED
        .iter()
        .map(|(f, n)| (f.to_string(), *n))
        .collect();
    assert_eq!(
        allowed.len(),
        RAW_METADATA_ALLOWED.len(),
        "a file listed twice"
    );
    let mut problems = Vec::new();
    for (name, count) in &found {
        let allowed = allowed.get(name).copied().unwrap_or(0);
        if *count > allowed {
            problems.push(format!(
                "{name}: {count} raw `metadata` accesses (allowed {allowed}); use apimachinery::meta's accessors or a typed ObjectMeta"
            ));
        }
    }
    for (name, allowed) in &allowed {
        let count = found.get(name).copied().unwrap_or(0);
        if count < *allowed {
            problems.push(format!(
                "{name}: {count} raw `metadata` accesses, fewer than the {allowed} allowed; lower its entry in RAW_METADATA_ALLOWED (remove it at 0)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
