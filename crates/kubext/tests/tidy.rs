//! Rules of the code base that no compiler checks: each crate depends only on the
//! crates ARCHITECTURE.md allows it, every source file says what it is for, and
//! the hot-path modules ARCHITECTURE.md names are marked and keep its rules.
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
