//! The built-in kinds that need no strategy of their own, served from a data
//! table (`data/builtin-kinds.tsv`: names, scope, subresources, generation,
//! etcd key) with one generic strategy: upstream's defaulting, status kept
//! apart from the main resource, printer columns, and the few create-time
//! rules of upstream's registry strategies (`strategy_rules`).

use apimachinery::DynamicObject;
use serde_json::{Value, json};

use super::defaults;
use super::printers;
use super::strategy_rules;
use super::validation;
use apimachinery::ErrorList;

use crate::ExtraSubresource;
use crate::resource::{Prepared, ResourceType, ScalePaths, Strategy, TableColumn};

const TABLE: &str = include_str!("../../data/builtin-kinds.tsv");

/// The pod subresources whose writes have rules of their own.
fn pod_subresource_update(
    subresource: &apimachinery::Subresource,
    new: &mut DynamicObject,
    old: &DynamicObject,
) -> Option<ErrorList> {
    super::pod_resize::update(subresource, new, old)
        .or_else(|| super::pod_ephemeral_containers::update(subresource, new, old))
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct KindRow {
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: Vec<&'static str>,
    pub categories: Vec<&'static str>,
    pub status: bool,
    pub scale: bool,
    pub tracks_generation: bool,
    /// Annotation changes bump the generation too (Deployments).
    pub annotations_bump_generation: bool,
    pub etcd_prefix: &'static str,
}

/// The table's rows; a malformed row is a build-time mistake caught by the
/// unit test, and skipped here.
pub fn rows() -> Vec<KindRow> {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(parse_row)
        .collect()
}

fn parse_row(line: &'static str) -> Option<KindRow> {
    let cells: Vec<&'static str> = line.split('\t').collect();
    let [
        group,
        version,
        resource,
        kind,
        scope,
        short,
        categories,
        subresources,
        generation,
        etcd,
    ] = cells.as_slice()
    else {
        return None;
    };
    let list = |cell: &'static str| -> Vec<&'static str> {
        match cell {
            "-" => Vec::new(),
            cell => cell.split(',').collect(),
        }
    };
    let subresources = list(subresources);
    Some(KindRow {
        group: if *group == "-" { "" } else { group },
        version,
        resource,
        kind,
        namespaced: match *scope {
            "ns" => true,
            "cluster" => false,
            _ => return None,
        },
        short_names: list(short),
        categories: list(categories),
        status: subresources.contains(&"status"),
        scale: subresources.contains(&"scale"),
        tracks_generation: matches!(*generation, "spec" | "spec+annotations"),
        annotations_bump_generation: *generation == "spec+annotations",
        etcd_prefix: etcd,
    })
}

/// A resource type for every row.
pub fn resource_types() -> Vec<ResourceType> {
    rows().into_iter().map(resource_type).collect()
}

fn resource_type(row: KindRow) -> ResourceType {
    let printer = printers::printer(row.group, row.kind);
    let strategy = BuiltinKind {
        group: row.group,
        kind: row.kind,
        status: row.status,
        annotations_bump_generation: row.annotations_bump_generation,
        orphans_by_default: strategy_rules::orphans_by_default(row.group, row.kind),
        subresource_update: (row.group.is_empty() && row.kind == "Pod")
            .then_some(pod_subresource_update as SubresourceUpdate),
        defaults: defaults::defaulter(row.group, row.kind),
        row: printer.as_ref().map(|p| p.row),
        on_create: strategy_rules::on_create(row.group, row.kind),
        on_update: strategy_rules::on_update(row.group, row.kind),
        grace_period: strategy_rules::grace_period(row.group, row.kind),
        validate: validation::on_create(row.group, row.kind),
        validate_update: validation::on_update(row.group, row.kind),
        name_rule: validation::name_rule(row.group, row.kind),
        status_update: strategy_rules::on_status_update(row.group, row.kind),
        status_keeps_metadata: strategy_rules::status_keeps_metadata(row.group, row.kind),
        warnings: strategy_rules::warnings(row.group, row.kind),
    };
    let mut t = ResourceType::new(
        row.group,
        row.version,
        row.kind,
        row.resource,
        row.namespaced,
        Box::new(strategy),
    );
    t.short_names = row.short_names.iter().map(|s| s.to_string()).collect();
    t.categories = row.categories.iter().map(|s| s.to_string()).collect();
    t.has_status = row.status;
    t.tracks_generation = row.tracks_generation;
    t.storage_path = row.etcd_prefix.to_string();
    t.return_deleted_object = strategy_rules::returns_deleted_object(row.group, row.kind);
    (t.field_labels, t.selectable_fields) = super::field_labels::field_labels(row.group, row.kind);
    match printer {
        Some(p) => use_printer(&mut t, p),
        None => default_table(&mut t),
    }
    if row.group.is_empty() && row.kind == "Pod" {
        t.extra_subresources = POD_SUBRESOURCES;
    }
    if row.group.is_empty() && row.kind == "Node" {
        t.extra_subresources = NODE_SUBRESOURCES;
    }
    if let Some((_, verbs, warning)) = UNSTORED.iter().find(|(k, ..)| *k == row.kind) {
        t.verbs = verbs;
        t.deprecation_warning = warning.map(str::to_owned);
        t.storage_version = crate::StorageVersion::None;
    }
    if row.scale {
        t.scale = Some(ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".spec.selector".into()),
        });
    }
    t
}

/// Core kinds never stored, with their verbs and deprecation warning:
/// Binding is the legacy form of `pods/binding` (the server binds the pod it
/// names); ComponentStatus is computed by probes (the control plane sets its
/// provider).
const UNSTORED: &[(&str, &[&str], Option<&str>)] = &[
    ("Binding", &["create"], None),
    (
        "ComponentStatus",
        crate::resource::READ_VERBS,
        Some("v1 ComponentStatus is deprecated in v1.19+"),
    ),
];

/// Pod subresources besides `status` (upstream's discovery).
const POD_SUBRESOURCES: &[ExtraSubresource] = &[
    sub("attach", "", "PodAttachOptions", &["create", "get"]),
    sub("binding", "", "Binding", &["create"]),
    sub(
        "ephemeralcontainers",
        "",
        "Pod",
        &["get", "patch", "update"],
    ),
    sub("eviction", "policy", "Eviction", &["create"]),
    sub("exec", "", "PodExecOptions", &["create", "get"]),
    sub("log", "", "Pod", &["get"]),
    sub(
        "portforward",
        "",
        "PodPortForwardOptions",
        &["create", "get"],
    ),
    sub("proxy", "", "PodProxyOptions", PROXY_VERBS),
    sub("resize", "", "Pod", &["get", "patch", "update"]),
];

/// The verbs of a `proxy` subresource: one per proxied HTTP method.
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

/// Node subresources besides `status` (upstream's discovery).
const NODE_SUBRESOURCES: &[ExtraSubresource] = &[sub("proxy", "", "NodeProxyOptions", PROXY_VERBS)];

/// Service subresources besides `status` (upstream's discovery).
pub(super) const SERVICE_SUBRESOURCES: &[ExtraSubresource] =
    &[sub("proxy", "", "ServiceProxyOptions", PROXY_VERBS)];

const fn sub(
    name: &'static str,
    group: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> ExtraSubresource {
    ExtraSubresource {
        name,
        group,
        version: "v1",
        kind,
        verbs,
    }
}

/// A printer's columns and the Age column where it puts it (kinds printed
/// without Age, such as PodTemplate and IPAddress, have no marker for it).
pub(super) fn use_printer(t: &mut ResourceType, printer: printers::Printer) {
    t.age_column = printer.columns.iter().any(TableColumn::is_age);
    t.columns = printer.columns;
}

/// A main-resource update keeps the stored status (it is written through `/status`).
pub(super) fn keep_status(new: &mut Value, old: &Value) {
    match old.get("status") {
        Some(status) => new["status"] = status.clone(),
        None => {
            if let Some(map) = new.as_object_mut() {
                map.remove("status");
            }
        }
    }
}

/// Upstream's default table for kinds without a printer: Name, Created At.
fn default_table(t: &mut ResourceType) {
    t.age_column = false;
    t.columns = vec![TableColumn::new(
        "Created At",
        "date",
        "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    )];
}

/// A kind's own preparation and validation of subresource updates.
type SubresourceUpdate =
    fn(&apimachinery::Subresource, &mut DynamicObject, &DynamicObject) -> Option<ErrorList>;

/// The generic strategy of a table kind.
struct BuiltinKind {
    group: &'static str,
    kind: &'static str,
    status: bool,
    annotations_bump_generation: bool,
    orphans_by_default: bool,
    /// Pods' `resize`.
    subresource_update: Option<SubresourceUpdate>,
    defaults: Option<fn(&mut DynamicObject)>,
    row: Option<fn(&Value) -> Vec<Value>>,
    on_create: Option<fn(&mut DynamicObject)>,
    on_update: Option<fn(&mut DynamicObject, &DynamicObject)>,
    grace_period: Option<fn(&DynamicObject, Option<i64>) -> i64>,
    validate: Option<fn(&DynamicObject) -> ErrorList>,
    validate_update: Option<fn(&DynamicObject, &DynamicObject) -> ErrorList>,
    name_rule: Option<validation::NameRule>,
    status_update: Option<fn(&mut DynamicObject, &DynamicObject)>,
    status_keeps_metadata: bool,
    warnings: Option<fn(&DynamicObject) -> Vec<String>>,
}

impl BuiltinKind {
    /// Upstream defaults when a body is decoded and again when the stored
    /// object is read back: before and after the strategy's own changes, so
    /// what those add is defaulted too (a Job's generated template labels).
    fn default(&self, obj: &mut DynamicObject) {
        if let Some(defaults) = self.defaults {
            defaults(obj);
        }
    }
}

impl Strategy for BuiltinKind {
    fn default(&self, obj: &mut DynamicObject) {
        BuiltinKind::default(self, obj);
    }

    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        self.default(obj);
        // Status is the controllers' to write (Nodes register with theirs).
        if self.status
            && self.kind != "Node"
            && let Some(map) = obj.as_object_mut()
        {
            map.insert("status".into(), json!({}));
        }
        if let Some(rule) = self.on_create {
            rule(obj);
        }
        self.default(obj);
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        self.default(new);
        if self.status {
            keep_status(new, old);
        }
        if let Some(rule) = self.on_update {
            rule(new, old);
        }
        self.default(new);
    }

    fn prepare_status_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        if self.status_keeps_metadata {
            crate::resource::take_status_and_metadata(new, old);
        } else {
            crate::resource::take_status(new, old);
        }
        if let Some(rule) = self.status_update {
            rule(new, old);
        }
    }

    fn name_errors(&self, obj: &DynamicObject, name: &str, prefix: bool) -> Option<Vec<String>> {
        self.name_rule.and_then(|rule| rule(obj, name, prefix))
    }

    fn warnings(&self, obj: &DynamicObject) -> Vec<String> {
        self.warnings
            .map_or_else(Vec::new, |warnings| warnings(obj))
    }

    fn annotations_bump_generation(&self) -> bool {
        self.annotations_bump_generation
    }

    fn orphans_by_default(&self) -> bool {
        self.orphans_by_default
    }

    fn subresource_update(
        &self,
        subresource: &apimachinery::Subresource,
        new: &mut DynamicObject,
        old: &DynamicObject,
    ) -> Option<ErrorList> {
        self.subresource_update
            .and_then(|update| update(subresource, new, old))
    }

    fn graceful_delete_period(&self, obj: &DynamicObject, requested: Option<i64>) -> Option<i64> {
        self.grace_period.map(|period| period(obj, requested))
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value(self.group, self.kind, obj, field)
    }

    fn refuse_delete(&self, name: &str) -> Option<&'static str> {
        strategy_rules::refuse_delete(self.group, self.kind, name)
    }

    fn default_propagation_warning(&self) -> Option<&'static str> {
        strategy_rules::default_propagation_warning(self.group, self.kind)
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        self.validate
            .map_or_else(Vec::new, |validate| validate(obj))
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> ErrorList {
        match self.validate_update {
            Some(validate) => validate(new, old),
            None => self.validate(new),
        }
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        match self.row {
            Some(row) => row(obj),
            None => vec![json!(
                apimachinery::meta::str_field(obj, "creationTimestamp").unwrap_or("")
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses() {
        let lines = TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count();
        assert_eq!(
            rows().len(),
            lines,
            "a row of builtin-kinds.tsv is malformed"
        );
    }

    #[test]
    fn deployments_scale_and_keep_status_apart() {
        let deployments = rows()
            .into_iter()
            .find(|r| r.resource == "deployments")
            .unwrap();
        assert!(deployments.scale && deployments.status && deployments.tracks_generation);
        assert_eq!(deployments.categories, ["all"]);
        let rc = rows()
            .into_iter()
            .find(|r| r.kind == "ReplicationController")
            .unwrap();
        assert_eq!(rc.etcd_prefix, "controllers");
        assert_eq!(rc.group, "");
    }
}
