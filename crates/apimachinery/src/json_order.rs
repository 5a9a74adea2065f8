//! The member order of built-in kinds' JSON: kube-apiserver encodes a built-in
//! object from its Go struct, so its members come in the struct's field order
//! (`name`, `image`, … of a container), not sorted by name as a
//! `serde_json::Map` keeps them. The order of every struct of every built-in
//! kind is data (`data/go-member-order.tsv`, generated from `k8s.io/api` by
//! `tools/upstream-data`); [`crate::json::encode_object`] writes by it.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../data/go-member-order.tsv");

/// Index of a struct in [`Orders::structs`].
pub(crate) type StructId = u32;

/// What a member's value holds: a struct after `wrappers` (`[]` for every
/// item of an array, `{}` for every value of a map; read two bytes at a
/// time).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Typed {
    pub(crate) wrappers: &'static str,
    pub(crate) id: StructId,
}

/// A struct's members in Go's order.
#[derive(Debug, Default)]
pub(crate) struct Struct {
    pub(crate) members: Vec<(&'static str, Option<Typed>)>,
    /// Member names sorted, with their position in `members`.
    pub(crate) sorted: Vec<(&'static str, u16)>,
}

impl Struct {
    /// Whether `name` is one of the members.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.sorted
            .binary_search_by(|(n, _)| (*n).cmp(name))
            .is_ok()
    }

    /// What the member `name` holds (`None`: unknown, or no struct).
    pub(crate) fn member(&self, name: &str) -> Option<Typed> {
        let at = self.sorted.binary_search_by(|(n, _)| (*n).cmp(name)).ok()?;
        self.members[self.sorted[at].1 as usize].1
    }
}

/// A multiply-rotate hash (rustc's FxHash) for the kind lookup every encode
/// of an object makes: a few instructions per word where the default
/// SipHash takes ~150 for `("v1", "ConfigMap")`. The keys are the table's.
#[derive(Default)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.write_u64(u64::from(byte));
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type KindMap = HashMap<(&'static str, &'static str), StructId, BuildHasherDefault<FxHasher>>;

/// The table, parsed once.
#[derive(Debug, Default)]
pub(crate) struct Orders {
    /// Root struct of each (apiVersion, kind).
    kinds: KindMap,
    pub(crate) structs: Vec<Struct>,
    object_meta: Option<StructId>,
}

impl Orders {
    /// The root struct of a built-in kind.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<&Struct> {
        let kinds: &HashMap<(&str, &str), StructId, BuildHasherDefault<FxHasher>> = &self.kinds;
        kinds
            .get(&(api_version, kind))
            .map(|id| &self.structs[*id as usize])
    }

    pub(crate) fn get(&self, id: StructId) -> &Struct {
        &self.structs[id as usize]
    }

    /// `meta/v1.ObjectMeta`, which `metadata` of every kind holds.
    pub(crate) fn object_meta(&self) -> Option<&Struct> {
        self.object_meta.map(|id| self.get(id))
    }
}

enum Row {
    Kind(&'static str, &'static str, &'static str),
    Type(&'static str, &'static str),
}

fn parse_rows(table: &'static str) -> impl Iterator<Item = Row> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|line| {
            let cells: Vec<&'static str> = line.split('\t').collect();
            match cells.as_slice() {
                ["kind", api_version, kind, root] => Some(Row::Kind(api_version, kind, root)),
                ["type", name, members] => Some(Row::Type(name, members)),
                ["type", name] => Some(Row::Type(name, "")),
                _ => None,
            }
        })
}

fn parse(table: &'static str) -> Orders {
    let mut ids: HashMap<&str, StructId> = HashMap::new();
    for row in parse_rows(table) {
        if let Row::Type(name, _) = row {
            let id = ids.len() as StructId;
            ids.insert(name, id);
        }
    }
    let mut orders = Orders::default();
    for row in parse_rows(table) {
        match row {
            Row::Kind(api_version, kind, root) => {
                if let Some(id) = ids.get(root) {
                    orders.kinds.insert((api_version, kind), *id);
                }
            }
            Row::Type(_, members) => {
                let members: Vec<(&'static str, Option<Typed>)> = members
                    .split(' ')
                    .filter(|m| !m.is_empty())
                    .map(|member| match member.split_once(':') {
                        None => (member, None),
                        Some((name, typed)) => {
                            let struct_at =
                                typed.len() - typed.trim_start_matches(['[', ']', '{', '}']).len();
                            let (wrappers, struct_name) = typed.split_at(struct_at);
                            let typed = ids.get(struct_name).map(|id| Typed { wrappers, id: *id });
                            (name, typed)
                        }
                    })
                    .collect();
                let mut sorted: Vec<(&'static str, u16)> = members
                    .iter()
                    .enumerate()
                    .map(|(at, (name, _))| (*name, at as u16))
                    .collect();
                sorted.sort_unstable();
                orders.structs.push(Struct { members, sorted });
            }
        }
    }
    orders.object_meta = ids.get("meta/v1.ObjectMeta").copied();
    orders
}

/// The parsed table.
pub(crate) fn orders() -> &'static Orders {
    static ORDERS: OnceLock<Orders> = OnceLock::new();
    ORDERS.get_or_init(|| parse(TABLE))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Rows from k8s.io/api v0.37.2's types: every struct type a member names
    /// has its own row, and the orders are Go's field orders.
    #[test]
    fn the_table_holds_go_field_orders() {
        let orders = orders();
        let pod = orders.kind("v1", "Pod").expect("Pod is a kind");
        let names: Vec<&str> = pod.members.iter().map(|m| m.0).collect();
        assert_eq!(names, ["kind", "apiVersion", "metadata", "spec", "status"]);
        let spec = pod.member("spec").expect("spec holds PodSpec");
        assert_eq!(spec.wrappers, "");
        let containers = orders.get(spec.id).member("containers").unwrap();
        assert_eq!(containers.wrappers, "[]");
        let container: Vec<&str> = orders.get(containers.id).members[..4]
            .iter()
            .map(|m| m.0)
            .collect();
        assert_eq!(container, ["name", "image", "command", "args"]);
        let meta = orders.object_meta().expect("ObjectMeta has a row");
        assert_eq!(meta.members[0].0, "name");
        assert!(meta.has("managedFields") && !meta.has("spec"));
        // `json::encode_object_into` looks only these up.
        let typed: Vec<&str> = meta
            .members
            .iter()
            .filter(|m| m.1.is_some())
            .map(|m| m.0)
            .collect();
        assert_eq!(typed, ["ownerReferences", "managedFields"]);
        assert!(orders.kind("apps/v1", "Deployment").is_some());
        assert!(orders.kind("example.com/v1", "Widget").is_none());
        // Every type a member refers to resolves (a typo would leave `None`).
        let total: usize = orders.structs.iter().map(|s| s.members.len()).sum();
        assert!(total > 4000, "{total} members");
        for line in TABLE.lines().filter(|l| l.starts_with("type\t")) {
            for member in line.split('\t').nth(2).unwrap_or("").split(' ') {
                if let Some((name, typed)) = member.split_once(':') {
                    let owner = line.split('\t').nth(1).unwrap();
                    let target = typed.trim_start_matches(['[', ']', '{', '}']);
                    assert!(
                        TABLE.contains(&format!("\ntype\t{target}\t")),
                        "{owner}.{name} refers to {target}, which has no row"
                    );
                }
            }
        }
    }

    /// k8s.io/api v0.37.2's round-trip fixtures (`testdata/HEAD/*.json`, in
    /// the Go module cache; skipped when absent): every field of every kind
    /// set, indented by Go. Compacted, they are the bytes Go's encoder writes;
    /// kubext's encoding of the same members must be those bytes.
    #[test]
    fn go_fixtures_are_written_byte_for_byte() {
        let Some(dir) = fixtures_dir() else {
            eprintln!("skipped: no k8s.io/api@v0.37.2/testdata in the Go module cache");
            return;
        };
        let mut compared = 0;
        let mut failures = Vec::new();
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let indented = std::fs::read_to_string(&path).unwrap();
            let go = compact(&indented);
            let value: serde_json::Value = serde_json::from_str(&go).unwrap();
            let (Some(api_version), Some(kind)) =
                (value["apiVersion"].as_str(), value["kind"].as_str())
            else {
                continue;
            };
            if orders().kind(api_version, kind).is_none() {
                continue;
            }
            compared += 1;
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let ours = String::from_utf8(crate::json::encode_object(
                &value,
                crate::json::MetadataMembers::All,
            ))
            .unwrap();
            if ours != go {
                let at = ours
                    .bytes()
                    .zip(go.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                failures.push(format!(
                    "{name}: at byte {at}\n  go:     {}\n  kubext: {}",
                    &go[at.saturating_sub(60)..(at + 100).min(go.len())],
                    &ours[at.saturating_sub(60)..(at + 100).min(ours.len())]
                ));
            }
        }
        eprintln!("{compared} fixtures compared");
        assert!(compared > 150, "only {compared} fixtures compared");
        assert!(
            failures.is_empty(),
            "{} of {compared} differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// `$GOMODCACHE` (or `$GOPATH/pkg/mod`, `~/go/pkg/mod`)'s k8s.io/api v0.37.2 fixtures.
    pub(crate) fn fixtures_dir() -> Option<std::path::PathBuf> {
        let cache = std::env::var_os("GOMODCACHE")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("GOPATH").map(|p| std::path::Path::new(&p).join("pkg/mod"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join("go/pkg/mod"))
            })?;
        let dir = cache.join("k8s.io/api@v0.37.2/testdata/HEAD");
        dir.is_dir().then_some(dir)
    }

    /// Go's indented JSON without the indentation (whitespace outside strings).
    pub(crate) fn compact(indented: &str) -> String {
        let mut out = String::with_capacity(indented.len());
        let (mut in_string, mut escaped) = (false, false);
        for c in indented.chars() {
            if in_string {
                out.push(c);
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
            } else if !c.is_whitespace() {
                in_string = c == '"';
                out.push(c);
            }
        }
        out
    }
}
