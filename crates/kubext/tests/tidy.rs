//! Rules of the code base that no compiler checks: each crate depends only on the
//! crates ARCHITECTURE.md allows it, and every source file says what it is for.
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

#[test]
fn every_source_file_opens_with_a_doc_comment() {
    let root = workspace_root();
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
