//! Go's serialization of zero values. kube-apiserver decodes a built-in kind
//! into its Go type and encodes it with encoding/json, which writes every
//! field without `omitempty` (`""`, `0`, `false`, `null`) and every non-pointer
//! struct (`resources: {}` on each container), whatever the request left out.
//! kubext keeps objects as JSON, so it adds those fields where Go would have
//! written them, and drops the present but empty ones `omitempty` leaves out
//! (`labels: {}`, `selector: {}`, `externalIPs: []`). The table (`data/go-zero-fields.tsv`) is generated from
//! `k8s.io/api` by `tools/upstream-data` (`cmd/zero-fields`).
//!
//! Go's encoder also writes every `resource.Quantity` in its canonical text
//! (`1024Mi` as `1Gi`, `0.5` and `"0.5"` as `"500m"`): the fields that hold
//! one are a second table of the same generator (`data/go-quantity-fields.tsv`),
//! walked in the same pass.

use std::sync::OnceLock;

use apimachinery::quantity::{ParseError, Quantity};
use serde_json::Value;

const TABLE: &str = include_str!("../data/go-zero-fields.tsv");
const QUANTITIES: &str = include_str!("../data/go-quantity-fields.tsv");

/// What Go writes inside one JSON value of a kind.
#[derive(Debug, Default)]
struct Shape {
    /// Object members: written as `zero` when absent or null (`None` for a
    /// member Go omits, listed for what it holds).
    members: Vec<Member>,
    /// Every item of an array.
    items: Option<Box<Shape>>,
    /// Every value of a map.
    values: Option<Box<Shape>>,
    /// The value is a `resource.Quantity`, written in its canonical text.
    quantity: bool,
    /// The value or something inside it is a quantity (set once loaded).
    holds_quantity: bool,
}

#[derive(Debug)]
struct Member {
    name: String,
    zero: Option<Value>,
    /// Dropped when present but empty (`omitempty`).
    omit: Omit,
    shape: Shape,
}

/// When Go's encoder leaves a present member out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Omit {
    Never,
    /// `omitempty` on a string, number, bool, slice or map: null, `""`, `0`,
    /// `false`, `[]` or `{}`.
    Empty,
    /// `omitempty` on a pointer: only null (a pointer to an empty value stays).
    Nil,
}

impl Omit {
    fn drops(self, value: &Value) -> bool {
        match (self, value) {
            (Omit::Never, _) => false,
            (_, Value::Null) => true,
            (Omit::Nil, _) => false,
            (Omit::Empty, Value::String(s)) => s.is_empty(),
            (Omit::Empty, Value::Bool(b)) => !b,
            (Omit::Empty, Value::Number(n)) => n.as_f64() == Some(0.0),
            (Omit::Empty, Value::Array(a)) => a.is_empty(),
            (Omit::Empty, Value::Object(m)) => m.is_empty(),
        }
    }
}

/// A row's last column: the JSON Go writes for a missing member, or when a
/// present one is left out.
enum Written {
    Zero(Value),
    Omitted(Omit),
}

impl Written {
    fn parse(cell: &str) -> Option<Written> {
        Some(match cell {
            "omitempty" => Written::Omitted(Omit::Empty),
            "omitnil" => Written::Omitted(Omit::Nil),
            json => Written::Zero(serde_json::from_str(json).ok()?),
        })
    }
}

impl Shape {
    /// No rows inside: filling changes nothing.
    fn is_empty(&self) -> bool {
        self.members.is_empty() && self.items.is_none() && self.values.is_none() && !self.quantity
    }

    fn member(&mut self, name: &str) -> &mut Member {
        let at = match self.members.iter().position(|m| m.name == name) {
            Some(at) => at,
            None => {
                self.members.push(Member {
                    name: name.to_string(),
                    zero: None,
                    omit: Omit::Never,
                    shape: Shape::default(),
                });
                self.members.len() - 1
            }
        };
        &mut self.members[at]
    }

    /// Marks the value at `path` (`spec.containers[].resources.limits{}`) a
    /// quantity.
    fn add_quantity(&mut self, path: &str) {
        let mut shape = self;
        for segment in path.split('.') {
            let name = segment.trim_end_matches(['[', ']', '{', '}']);
            shape = shape.member(name).shape.inner(&segment[name.len()..]);
        }
        shape.quantity = true;
    }

    /// The shape of what `suffixes` (`[]` items, `{}` values, in order: items
    /// of items, values of items…) reach inside this one.
    fn inner(&mut self, mut suffixes: &str) -> &mut Shape {
        let mut shape = self;
        while !suffixes.is_empty() {
            let inner = if suffixes.starts_with("[]") {
                &mut shape.items
            } else {
                &mut shape.values
            };
            shape = inner.get_or_insert_with(Box::default);
            suffixes = &suffixes[2..];
        }
        shape
    }

    /// Adds the row `path` (`spec.containers[].resources`).
    fn add(&mut self, path: &str, written: Written) {
        let mut segments = path.split('.').peekable();
        let mut shape = self;
        while let Some(segment) = segments.next() {
            let name = segment.trim_end_matches(['[', ']', '{', '}']);
            let member = shape.member(name);
            if segments.peek().is_none() && segment == name {
                match written {
                    Written::Zero(zero) => member.zero = Some(zero),
                    Written::Omitted(omit) => member.omit = omit,
                }
                return;
            }
            shape = member.shape.inner(&segment[name.len()..]);
            if segments.peek().is_none() {
                // A row for every item or value itself is never written.
                return;
            }
        }
    }

    /// Sets [`Shape::holds_quantity`] here and below; whether it holds one.
    fn mark_quantities(&mut self) -> bool {
        let mut holds = self.quantity;
        for member in &mut self.members {
            holds |= member.shape.mark_quantities();
        }
        for inner in [&mut self.items, &mut self.values].into_iter().flatten() {
            holds |= inner.mark_quantities();
        }
        self.holds_quantity = holds;
        holds
    }

    /// Why Go's decoder refuses the first quantity in `value` it refuses.
    fn quantity_error(&self, value: &Value) -> Option<ParseError> {
        if !self.holds_quantity {
            return None;
        }
        if self.quantity {
            return decode_quantity(value).err();
        }
        match value {
            Value::Object(map) => match &self.values {
                Some(values) => map.values().find_map(|v| values.quantity_error(v)),
                None => self
                    .members
                    .iter()
                    .find_map(|m| m.shape.quantity_error(map.get(&m.name)?)),
            },
            Value::Array(items) => {
                let shape = self.items.as_ref()?;
                items.iter().find_map(|item| shape.quantity_error(item))
            }
            _ => None,
        }
    }

    /// Sorts every shape's members by name, the order of a `serde_json::Map`'s
    /// keys, so that [`Shape::fill`] walks both lists side by side.
    fn sort(&mut self) {
        self.members.sort_by(|a, b| a.name.cmp(&b.name));
        for member in &mut self.members {
            member.shape.sort();
        }
        for inner in [&mut self.items, &mut self.values].into_iter().flatten() {
            inner.sort();
        }
    }

    /// Writes Go's zero values into `value` and drops what `omitempty` leaves out.
    ///
    /// Why a merge: an object's members and the shape's are both sorted by
    /// name, so one pass over both finds each member's row (a lookup per row
    /// cost ~15 k instructions per ConfigMap write, most of them on metadata's
    /// absent members). [`tests::fill_by_lookup`] is the plain way; a test
    /// checks the two agree on every kind.
    fn fill(&self, value: &mut Value) {
        // Nothing to write inside a value whose shape has no rows (a
        // ConfigMap's `data`): no walk over it.
        if self.is_empty() {
            return;
        }
        if self.quantity {
            canonicalize_quantity(value);
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(values) = &self.values {
                    map.values_mut().for_each(|v| values.fill(v));
                    return;
                }
                self.fill_members(map, None);
            }
            Value::Array(items) => {
                if let Some(shape) = &self.items {
                    items.iter_mut().for_each(|item| shape.fill(item));
                }
            }
            _ => {}
        }
    }

    /// [`Shape::fill`] of an object's members, but for the member named
    /// `skip` (left as it is, present or not).
    fn fill_members(&self, map: &mut serde_json::Map<String, Value>, skip: Option<&str>) {
        let mut dropped: Vec<&str> = Vec::new();
        let mut added: Vec<&Member> = Vec::new();
        let mut present = map.iter_mut().peekable();
        for member in &self.members {
            if skip == Some(member.name.as_str()) {
                continue;
            }
            while present
                .next_if(|(name, _)| name.as_str() < member.name.as_str())
                .is_some()
            {}
            match present.next_if(|(name, _)| **name == member.name) {
                Some((_, v)) if member.omit.drops(v) => dropped.push(&member.name),
                Some((_, v)) if !v.is_null() => member.shape.fill(v),
                Some((_, v)) => {
                    if let Some(zero) = member.zero_filled() {
                        *v = zero;
                    }
                }
                None if member.zero.is_some() => added.push(member),
                None => {}
            }
        }
        for name in dropped {
            map.remove(name);
        }
        for member in added {
            if let Some(zero) = member.zero_filled() {
                map.insert(member.name.clone(), zero);
            }
        }
    }
}

/// A quantity's JSON as `Quantity.MarshalJSON` writes it: its canonical text,
/// from a string or a number (Go parses a number's text; a float here is its
/// shortest decimal, so an exponent literal such as `1e3` reads as `1000`).
/// What does not parse is left for validation to refuse.
fn canonicalize_quantity(value: &mut Value) {
    let Ok(Some(quantity)) = decode_quantity(value) else {
        return;
    };
    let canonical = quantity.to_string();
    if !matches!(value, Value::String(s) if *s == canonical) {
        *value = Value::String(canonical);
    }
}

/// What `Quantity.UnmarshalJSON` makes of a JSON value: nothing for null, the
/// quantity a string or a number's text spells, or its error (any other JSON
/// reaches `ParseQuantity` as its own text, which no quantity matches).
fn decode_quantity(value: &Value) -> Result<Option<Quantity>, ParseError> {
    let text = match value {
        Value::Null => return Ok(None),
        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string().into(),
            (None, Some(u), _) => u.to_string().into(),
            (None, None, Some(f)) => f.to_string().into(),
            _ => return Err(ParseError::FormatWrong),
        },
        _ => return Err(ParseError::FormatWrong),
    };
    Quantity::parse(text.trim()).map(Some)
}

impl Member {
    /// The member's zero value with Go's zero fields written inside it.
    fn zero_filled(&self) -> Option<Value> {
        let mut v = self.zero.clone()?;
        self.shape.fill(&mut v);
        Some(v)
    }
}

/// Keyed by group, version and kind as the table spells them (no allocation
/// per lookup: every write of a built-in kind looks its kind up).
/// Looked up twice per write: by foldhash, not the default SipHash.
type Kinds = foldhash::HashMap<(&'static str, &'static str, &'static str), Shape>;

fn kinds() -> &'static Kinds {
    static KINDS: OnceLock<Kinds> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut kinds = Kinds::default();
        for line in TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cells: Vec<&str> = line.split('\t').collect();
            let [group, version, kind, path, zero] = cells.as_slice() else {
                continue;
            };
            let Some(written) = Written::parse(zero) else {
                continue;
            };
            let group = if *group == "core" { "" } else { *group };
            kinds
                .entry((group, *version, *kind))
                .or_default()
                .add(path, written);
        }
        for line in QUANTITIES
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cells: Vec<&str> = line.split('\t').collect();
            let [group, version, kind, path] = cells.as_slice() else {
                continue;
            };
            let group = if *group == "core" { "" } else { *group };
            kinds
                .entry((group, *version, *kind))
                .or_default()
                .add_quantity(path);
        }
        kinds.values_mut().for_each(|shape| {
            shape.sort();
            shape.mark_quantities();
        });
        kinds
    })
}

/// Adds to `obj`, an object of `group`/`version`/`kind`, the fields Go's
/// encoder writes although they are absent (or null); kinds without rows are
/// left alone.
pub fn fill(group: &str, version: &str, kind: &str, obj: &mut Value) {
    let kinds: &Kinds = kinds();
    if let Some(shape) = kinds.get(&(group, version, kind)) {
        shape.fill(obj);
    }
}

/// Why kube-apiserver's decoder would refuse `obj`, an object of
/// `group`/`version`/`kind`, for one of its quantities (`quantities must match
/// the regular expression …`), if it would.
pub fn quantity_error(group: &str, version: &str, kind: &str, obj: &Value) -> Option<ParseError> {
    kinds().get(&(group, version, kind))?.quantity_error(obj)
}

/// [`fill`] for an object's body ([`apimachinery::DynamicObject::body`]):
/// its typed metadata writes itself as Go does, so no `metadata` member is
/// added here.
pub fn fill_body(group: &str, version: &str, kind: &str, body: &mut Value) {
    let kinds: &Kinds = kinds();
    if let (Some(shape), Some(map)) = (kinds.get(&(group, version, kind)), body.as_object_mut()) {
        shape.fill_members(map, Some("metadata"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What kube-apiserver answers for these objects (Go's encoding of the
    /// decoded types): a container's `resources: {}`, a ReplicationController's
    /// `replicas: 0`, a Service's `status.loadBalancer: {}`; since 1.35 no
    /// template `creationTimestamp: null` (`omitzero`).
    #[test]
    fn writes_what_go_writes() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "busybox"}]}});
        fill("", "v1", "Pod", &mut pod);
        assert_eq!(pod["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(pod["status"], json!({}));
        assert_eq!(pod["metadata"]["creationTimestamp"], Value::Null);

        let mut deployment = json!({"spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": null}]}}}});
        fill("apps", "v1", "Deployment", &mut deployment);
        let template = &deployment["spec"]["template"];
        assert!(
            !template["metadata"]
                .as_object()
                .unwrap()
                .contains_key("creationTimestamp")
        );
        assert_eq!(template["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(deployment["spec"]["strategy"], json!({}));

        let mut rc = json!({"spec": {}, "status": {}});
        fill("", "v1", "ReplicationController", &mut rc);
        assert_eq!(rc["status"]["replicas"], json!(0));

        let mut service = json!({"spec": {"ports": [{"port": 80}]}});
        fill("", "v1", "Service", &mut service);
        assert_eq!(service["status"], json!({"loadBalancer": {}}));

        // Present values are kept; kinds without rows are untouched.
        let mut cm = json!({"data": {"a": "b"}});
        fill("", "v1", "NoSuchKind", &mut cm);
        assert_eq!(cm, json!({"data": {"a": "b"}}));
    }

    /// Quantities as Go's `Quantity.MarshalJSON` writes them after
    /// `UnmarshalJSON`: the expected texts are what k8s.io/api v0.37.2's
    /// `ResourceRequirements` round trip wrote for the same input (run once).
    #[test]
    fn quantities_are_written_in_their_canonical_text() {
        let sent = json!({"a": "1024Mi", "b": "0.5", "c": 0.5, "d": 2, "e": "1.5Gi",
            "f": "1000m", "g": "1e3", "h": "+1", "i": "01", "j": "0.1", "k": "2000Mi",
            "l": 1.0, "m": "100k", "n": "1.5e3", "o": "1Ki", "p": "512", "q": "0",
            "r": "0.0001", "s": "1m", "t": "1.25"});
        let go_wrote = json!({"a": "1Gi", "b": "500m", "c": "500m", "d": "2", "e": "1536Mi",
            "f": "1", "g": "1e3", "h": "+1", "i": "01", "j": "100m", "k": "2000Mi", "l": "1",
            "m": "100k", "n": "1500", "o": "1Ki", "p": "512", "q": "0", "r": "100u",
            "s": "1m", "t": "1250m"});
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "i",
            "resources": {"limits": sent.clone(), "requests": {"cpu": "nonsense"}}}],
            "overhead": {"cpu": 0.25}}});
        fill("", "v1", "Pod", &mut pod);
        let resources = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(resources["limits"], go_wrote);
        // What does not parse is left for validation.
        assert_eq!(resources["requests"], json!({"cpu": "nonsense"}));
        assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m"}));

        let mut pvc = json!({"spec": {"resources": {"requests": {"storage": "1073741824"}}},
            "status": {"capacity": {"storage": "1024Mi"}}});
        fill("", "v1", "PersistentVolumeClaim", &mut pvc);
        assert_eq!(
            pvc["spec"]["resources"]["requests"]["storage"],
            "1073741824"
        );
        assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi");
    }

    /// What kube-apiserver answers (1.33 checked side by side; 1.37.2's
    /// answers in `crates/protobuf/tests/data`): `omitempty` members sent
    /// empty are left out, and so is a null `creationTimestamp` (`omitzero`
    /// since 1.35); a pointer to an empty struct is kept.
    #[test]
    fn drops_what_omitempty_leaves_out() {
        let mut cm = json!({"metadata": {"name": "e", "labels": {}, "annotations": {},
            "creationTimestamp": null}, "data": {}});
        fill("", "v1", "ConfigMap", &mut cm);
        assert_eq!(cm, json!({"metadata": {"name": "e"}}));

        let mut service = json!({"spec": {"ports": [{"port": 80}], "selector": {},
            "externalIPs": []}});
        fill("", "v1", "Service", &mut service);
        assert_eq!(service["spec"].get("selector"), None);
        assert_eq!(service["spec"].get("externalIPs"), None);

        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "i",
            "securityContext": {}, "command": []}]}});
        fill("", "v1", "Pod", &mut pod);
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["securityContext"], json!({}));
        assert_eq!(container.get("command"), None);
    }

    /// The plain way [`Shape::fill`] walks an object: each row looked up.
    fn fill_by_lookup(shape: &Shape, value: &mut Value) {
        if shape.quantity {
            canonicalize_quantity(value);
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(values) = &shape.values {
                    map.values_mut().for_each(|v| fill_by_lookup(values, v));
                    return;
                }
                for member in &shape.members {
                    if map.get(&member.name).is_some_and(|v| member.omit.drops(v)) {
                        map.remove(&member.name);
                        continue;
                    }
                    match map.get_mut(&member.name) {
                        Some(v) if !v.is_null() => fill_by_lookup(&member.shape, v),
                        slot => {
                            let Some(zero) = &member.zero else { continue };
                            let mut v = zero.clone();
                            fill_by_lookup(&member.shape, &mut v);
                            match slot {
                                Some(existing) => *existing = v,
                                None => {
                                    map.insert(member.name.clone(), v);
                                }
                            }
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(inner) = &shape.items {
                    items
                        .iter_mut()
                        .for_each(|item| fill_by_lookup(inner, item));
                }
            }
            _ => {}
        }
    }

    /// An object holding, at every member the shape names, the `n`th of a few
    /// interesting values (absent, null, empty, a filled object, a value), plus
    /// members no row names: every branch of a fill, for every kind.
    fn sample(shape: &Shape, n: usize, depth: usize) -> Value {
        if shape.quantity {
            return [
                json!("1024Mi"),
                json!(0.5),
                json!(2),
                json!("x"),
                json!(null),
            ][n % 5]
                .clone();
        }
        if let Some(values) = &shape.values {
            return json!({"k": sample(values, n + 1, depth + 1)});
        }
        if let Some(items) = &shape.items {
            return json!([sample(items, n, depth + 1), sample(items, n + 2, depth + 1)]);
        }
        let mut map = serde_json::Map::new();
        map.insert("0-unlisted".into(), json!(""));
        map.insert("~unlisted".into(), json!({}));
        for (i, member) in shape.members.iter().enumerate() {
            let nested = || sample(&member.shape, n + i, depth + 1);
            let value = match (n + i) % 6 {
                0 => continue,
                1 => Value::Null,
                2 => json!(""),
                3 => json!({}),
                4 if depth < 12 => nested(),
                _ => json!(0),
            };
            map.insert(member.name.clone(), value);
        }
        Value::Object(map)
    }

    #[test]
    fn the_merge_fills_as_the_plain_lookup_does_for_every_kind() {
        let mut checked = 0;
        for shape in kinds().values() {
            for n in 0..6 {
                let mut merged = sample(shape, n, 0);
                let mut looked_up = merged.clone();
                shape.fill(&mut merged);
                fill_by_lookup(shape, &mut looked_up);
                assert_eq!(merged, looked_up);
                checked += 1;
            }
        }
        assert!(checked > 6 * 100, "{checked}");
    }

    /// A body without `metadata` is filled as the whole object is, less the
    /// metadata the whole object gets: for every kind and sample.
    #[test]
    fn a_body_is_filled_as_its_object_is_less_metadata() {
        for (&(group, version, kind), shape) in kinds() {
            for n in 0..6 {
                let mut body = sample(shape, n, 0);
                if let Some(map) = body.as_object_mut() {
                    map.remove("metadata");
                }
                let mut whole = body.clone();
                fill_body(group, version, kind, &mut body);
                fill(group, version, kind, &mut whole);
                if let Some(map) = whole.as_object_mut() {
                    map.remove("metadata");
                }
                assert_eq!(body, whole, "{group}/{version} {kind}");
            }
        }
    }

    /// The merge relies on `serde_json::Map` iterating in key order: a
    /// dependency turning on serde_json's `preserve_order` would break that.
    #[test]
    fn json_maps_iterate_sorted() {
        let map: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"b":1,"a":2,"ab":3}"#).unwrap();
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "ab", "b"]);
    }

    /// Filling twice is filling once: the store may fill before and after a
    /// type's preparation.
    #[test]
    fn filling_is_idempotent() {
        let mut once = json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        fill("batch", "v1", "Job", &mut once);
        let mut twice = once.clone();
        fill("batch", "v1", "Job", &mut twice);
        assert_eq!(once, twice);
    }
}
