//! Resource types that serve the instances of a CRD, one per served version.

use crate::conversion::WebhookConverter;
use apimachinery::DynamicObject;
use registry::{Prepared, ResourceType, Strategy, TableColumn};
use schema::Structural;
use schema::jsonpath::JsonPath;
use serde_json::Value;
use std::sync::Arc;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether the CRD's `Established` condition is True.
pub fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

/// The resource type of the CRD's storage version (whether served or not), for cleanup.
pub fn storage_type(crd: &Value, conversion: Option<&webhook::Caller>) -> Option<ResourceType> {
    let mut established = crd.clone();
    crate::crd::set_condition(&mut established, "Established", "", "");
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .position(|v| v.get("storage") == Some(&Value::Bool(true)))?;
    established["spec"]["versions"][storage]["served"] = Value::Bool(true);
    established["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.get(storage))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(String::from)
        .and_then(|name| {
            served_types(&established, conversion)
                .into_iter()
                .find(|t| t.version == name)
        })
}

/// The resource types for every served version of an established CRD.
/// `conversion` calls its conversion webhook, if it has one (without it,
/// objects are converted as with strategy `None`).
pub fn served_types(crd: &Value, conversion: Option<&webhook::Caller>) -> Vec<ResourceType> {
    if !is_established(crd) {
        return Vec::new();
    }
    // A terminating CRD is still served (its instances are being deleted and their
    // own finalizers need their controllers), but refuses new instances.
    let terminating = apimachinery::meta::deletion_timestamp(crd).is_some();
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    let kind = str_at(crd, "/spec/names/kind");
    let namespaced = str_at(crd, "/spec/scope") == "Namespaced";
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let storage_version = versions
        .into_iter()
        .flatten()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .map(|v| str_at(v, "/name"))
        .unwrap_or("");
    let storage_api_version = format!("{group}/{storage_version}");
    let storage_schema = versions
        .into_iter()
        .flatten()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .and_then(compiled_schema);
    versions
        .into_iter()
        .flatten()
        .filter(|v| v.get("served") == Some(&Value::Bool(true)))
        .map(|v| {
            let has_status = v.pointer("/subresources/status").is_some();
            let scale = v
                .pointer("/subresources/scale")
                .map(|s| registry::ScalePaths {
                    spec_replicas: str_at(s, "/specReplicasPath").to_string(),
                    status_replicas: str_at(s, "/statusReplicasPath").to_string(),
                    label_selector: s
                        .get("labelSelectorPath")
                        .and_then(Value::as_str)
                        .map(String::from),
                });
            let (columns, printers) = printer_columns(v);
            let mut t = ResourceType::new(
                group,
                str_at(v, "/name"),
                kind,
                plural,
                namespaced,
                Box::new(CustomResources::new(CustomResources {
                    has_status,
                    schema: compiled_schema(v),
                    rules: None,
                    has_defaults: v
                        .pointer("/schema/openAPIV3Schema")
                        .is_some_and(declares_default),
                    validation_reads_metadata: v
                        .pointer("/schema/openAPIV3Schema")
                        .is_some_and(validation_reads_metadata),
                    printers,
                    selectable: selectable_fields(v),
                    api_version: format!("{group}/{}", str_at(v, "/name")),
                    storage_api_version: storage_api_version.clone(),
                    storage_schema: storage_schema.clone(),
                    scale: scale.clone(),
                })),
            );
            t.storage_version = registry::StorageVersion::Other {
                group: group.to_string(),
                version: storage_version.to_string(),
            };
            t.field_labels = registry::FieldLabels::CustomResource;
            t.selectable_fields = selectable_fields(v)
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            t.columns = columns;
            t.age_column = false;
            t.structured = false;
            t.custom_resource_discovery = true;
            t.set_patch_schema(crate::list_types::patch_schema(
                v.pointer("/schema/openAPIV3Schema"),
            ));
            t.scale = scale;
            if v.get("deprecated") == Some(&Value::Bool(true)) {
                let warning = match v.get("deprecationWarning").and_then(Value::as_str) {
                    Some(w) => w.to_string(),
                    None => format!("{group}/{} {kind} is deprecated", str_at(v, "/name")),
                };
                t.deprecation_warning = Some(warning);
            }
            let singular = str_at(crd, "/spec/names/singular");
            t.singular = if singular.is_empty() {
                kind.to_lowercase()
            } else {
                singular.to_string()
            };
            t.short_names = string_list(crd, "/spec/names/shortNames");
            t.categories = string_list(crd, "/spec/names/categories");
            t.storage_path = format!("{group}/{plural}");
            t.has_status = has_status;
            t.tracks_generation = true;
            t.allow_unconditional_update = false;
            t.openapi_schema = v.pointer("/schema/openAPIV3Schema").cloned();
            t.list_kind_name = Some(str_at(crd, "/spec/names/listKind"))
                .filter(|l| !l.is_empty())
                .map(String::from);
            t.converter = conversion
                .and_then(|caller| WebhookConverter::of(crd, &storage_api_version, caller))
                .map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn registry::Converter>);
            t.refuse_create = terminating.then(|| {
                "create not allowed while custom resource definition is terminating".to_string()
            });
            t
        })
        .collect()
}

fn string_list(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

/// A version's printer columns (default: Age from creationTimestamp), and the
/// compiled JSONPath and type of each.
fn printer_columns(version: &Value) -> (Vec<TableColumn>, Vec<(Option<JsonPath>, String)>) {
    let declared = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array);
    let default = vec![serde_json::json!({
        "name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
        "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
    })];
    let specs = match declared {
        Some(cols) if !cols.is_empty() => cols.clone(),
        _ => default,
    };
    specs
        .iter()
        .map(|c| {
            let column = TableColumn::owned(
                str_at(c, "/name").to_string(),
                str_at(c, "/type").to_string(),
                str_at(c, "/format").to_string(),
                str_at(c, "/description").to_string(),
                c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
            );
            let path = JsonPath::parse_printer_column(str_at(c, "/jsonPath")).ok();
            (column, (path, str_at(c, "/type").to_string()))
        })
        .unzip()
}

/// Custom resources: status is only written through the status subresource
/// when that is enabled; table cells come from the printer columns.
struct CustomResources {
    has_status: bool,
    /// The version's structural schema (validation, pruning, defaulting).
    schema: Option<Arc<Structural>>,
    /// The schema declares defaults (then reads apply them too).
    has_defaults: bool,
    printers: Vec<(Option<JsonPath>, String)>,
    /// `selectableFields`: the field-selector name (`spec.color`) and its path.
    selectable: Vec<(String, Vec<String>)>,
    /// This version's apiVersion and the storage version's (conversion `None`
    /// rewrites only `apiVersion`).
    api_version: String,
    storage_api_version: String,
    /// The storage version's schema: what another version writes is pruned
    /// to it after conversion, as upstream's storage codec does.
    storage_schema: Option<Arc<Structural>>,
    scale: Option<registry::ScalePaths>,
    /// The schema's `x-kubernetes-validations`, compiled once per version.
    rules: Option<Arc<cel_rules::RuleSet>>,
    /// See [`validation_reads_metadata`].
    validation_reads_metadata: bool,
}

fn with_api_version(obj: &Value, api_version: &str) -> Option<Value> {
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        return None;
    }
    let mut converted = obj.clone();
    converted["apiVersion"] = Value::String(api_version.to_string());
    Some(converted)
}

/// Whether validating an object against `schema` (an `openAPIV3Schema`) can
/// depend on its `metadata`: the root constrains it (a `metadata` property
/// with more than a type or description, or `metadata` required), or a root
/// rule mentions it (`self.metadata.name`). Other schemas validate the body
/// alone to the same errors, without writing the whole object out as JSON
/// for every write (`tests::metadata_blind_schemas_validate_the_body_alike`).
fn validation_reads_metadata(schema: &Value) -> bool {
    // The schema's property named `metadata` (a schema, not an object's metadata).
    let metadata_schema = schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|properties| properties.iter().find(|(name, _)| *name == "metadata"));
    let constrained = metadata_schema
        .and_then(|(_, m)| m.as_object())
        .is_some_and(|m| m.keys().any(|k| k != "type" && k != "description"));
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|f| f == "metadata"));
    let rules_mention = schema
        .get("x-kubernetes-validations")
        .is_some_and(|rules| rules.to_string().contains("metadata"));
    constrained || required || rules_mention
}

fn declares_default(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.contains_key("default") || map.values().any(declares_default),
        Value::Array(items) => items.iter().any(declares_default),
        _ => false,
    }
}

/// Compile a version's schema once per CRD change; a schema that does not compile
/// was already rejected by CRD validation, so `None` only means "no schema".
fn compiled_schema(version: &Value) -> Option<Arc<Structural>> {
    let raw = version.pointer("/schema/openAPIV3Schema")?;
    match schema::compile(raw) {
        Ok(s) => Some(Arc::new(s)),
        Err(e) => {
            tracing::warn!(error = %e, "cannot compile a custom resource schema");
            None
        }
    }
}

fn selectable_fields(version: &Value) -> Vec<(String, Vec<String>)> {
    version
        .get("selectableFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let path = str_at(f, "/jsonPath");
            let segments = schema::jsonpath::validate_selectable_field_path(path).ok()?;
            Some((path.trim_start_matches('.').to_string(), segments))
        })
        .collect()
}

impl CustomResources {
    /// Compiles the schema's validation rules.
    fn new(mut cr: CustomResources) -> CustomResources {
        cr.rules = cr
            .schema
            .as_deref()
            .and_then(cel_rules::RuleSet::compile)
            .map(Arc::new);
        cr
    }

    /// Schema validation, then (unless it found blocking errors) the CEL
    /// rules, as upstream's strategy runs them.
    fn validate_object(&self, new: &Value, old: Option<&Value>) -> apimachinery::ErrorList {
        let Some(schema) = &self.schema else {
            return Vec::new();
        };
        let root = apimachinery::FieldPath::root();
        let mut errs = schema::validate(new, old, schema, &root);
        if let Some(rules) = &self.rules {
            if errs.iter().any(blocks_rules) {
                errs.push(apimachinery::FieldError::invalid(
                    &apimachinery::FieldPath::new("<nil>"),
                    Value::Null,
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                errs.extend(schema::evaluate_rules(
                    new,
                    old,
                    schema,
                    &root,
                    &rules.budgeted(),
                ));
            }
        }
        errs
    }

    fn validate_scale(&self, obj: &Value) -> apimachinery::ErrorList {
        self.scale
            .as_ref()
            .map(|scale| crate::scale::validate_object(obj, scale, false))
            .unwrap_or_default()
    }
}

impl Strategy for CustomResources {
    /// Fields the schema does not know, and root `metadata` fields ObjectMeta does
    /// not know (upstream drops both).
    fn prune(&self, obj: &mut Value) -> Option<Vec<String>> {
        let mut unknown = match &self.schema {
            Some(schema) => schema::prune(obj, schema, true),
            None => Vec::new(),
        };
        unknown.extend(schema::prune_root_metadata(obj));
        Some(unknown)
    }

    /// The schema and its rules see the whole object, metadata included
    /// (`self.metadata.name` in a rule), when they can read the metadata.
    fn validate(&self, obj: &DynamicObject) -> apimachinery::ErrorList {
        let mut errs = match self.validation_reads_metadata {
            true => self.validate_object(&obj.to_value(), None),
            false => self.validate_object(obj, None),
        };
        errs.extend(self.validate_scale(obj));
        errs
    }

    fn validate_update(&self, new: &DynamicObject, old: &DynamicObject) -> apimachinery::ErrorList {
        // Ratcheting: unchanged invalid values may stay.
        let mut errs = match self.validation_reads_metadata {
            true => self.validate_object(&new.to_value(), Some(&old.to_value())),
            false => self.validate_object(new, Some(old)),
        };
        errs.extend(self.validate_scale(new));
        errs
    }

    /// Conversion `None` (apiVersion only) pruned to this version's schema, as
    /// upstream's converter does, and defaults applied on read, so a default
    /// added to the schema later shows up on existing objects.
    /// Stored in another version (or read-time defaults to apply).
    fn converts_on_read(&self, stored: &registry::Object) -> bool {
        self.has_defaults || stored.api_version() != self.api_version
    }

    fn convert_from_storage(&self, obj: &Value) -> Option<Value> {
        let mut converted = with_api_version(obj, &self.api_version);
        if let (Some(value), Some(schema)) = (converted.as_mut(), self.schema.as_ref()) {
            schema::prune(value, schema, true);
        }
        let Some(schema) = self.schema.as_ref().filter(|_| self.has_defaults) else {
            return converted;
        };
        let mut value = converted.clone().unwrap_or_else(|| obj.clone());
        schema::default(&mut value, schema);
        if converted.is_none() && value == *obj {
            return None;
        }
        Some(value)
    }

    /// Served in the storage version: conversion `None` changes nothing.
    fn stored_as_served(&self) -> bool {
        self.api_version == self.storage_api_version
    }

    /// Conversion `None` to the storage version, pruned to its schema: a field
    /// only this version declares is not stored.
    fn to_storage(&self, obj: &Value) -> Option<Value> {
        let mut stored = with_api_version(obj, &self.storage_api_version)?;
        if let Some(schema) = &self.storage_schema {
            schema::prune(&mut stored, schema, true);
        }
        Some(stored)
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        let (_, segments) = self.selectable.iter().find(|(name, _)| name == field)?;
        let value = segments
            .iter()
            .try_fold(obj, |node, s| node.get(s.as_str()));
        Some(match value {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        })
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        self.printers
            .iter()
            .map(|(path, kind)| {
                path.as_ref()
                    .map_or(Value::Null, |p| p.printer_column_cell(obj, kind))
            })
            .collect()
    }

    fn default(&self, obj: &mut DynamicObject) {
        if let Some(schema) = &self.schema {
            schema::default(obj, schema);
            schema::defaulting::prune_non_nullable_nulls(obj, schema);
        }
    }

    /// Defaults were applied where the body was decoded ([`Self::default`],
    /// and again after a mutating admission), as upstream's decoder does:
    /// only `status` is dropped here, as upstream's `PrepareForCreate`.
    fn prepare_create(&self, obj: &mut DynamicObject) -> Prepared {
        if self.has_status
            && let Some(map) = obj.as_object_mut()
        {
            map.remove("status");
        }
        Prepared::BodyChanged
    }

    fn prepare_update(&self, new: &mut DynamicObject, old: &DynamicObject) {
        if let Some(schema) = &self.schema {
            schema::default(new, schema);
            schema::defaulting::prune_non_nullable_nulls(new, schema);
        }
        if !self.has_status {
            return;
        }
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove("status");
                }
            }
        }
    }
}

/// Upstream's `hasBlockingErr`: enum, required, too long, too many and wrong
/// type errors keep the CEL rules from running.
fn blocks_rules(e: &apimachinery::FieldError) -> bool {
    use apimachinery::field::ErrorType;
    matches!(
        e.kind,
        ErrorType::NotSupported
            | ErrorType::Required
            | ErrorType::TooLong
            | ErrorType::TooMany
            | ErrorType::TypeInvalid
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strategy(schema: Value) -> CustomResources {
        CustomResources::new(CustomResources {
            has_status: false,
            schema: schema::compile(&schema).ok().map(Arc::new),
            has_defaults: false,
            printers: Vec::new(),
            selectable: Vec::new(),
            api_version: "example.com/v1".into(),
            storage_api_version: "example.com/v1".into(),
            storage_schema: None,
            scale: None,
            rules: None,
            validation_reads_metadata: validation_reads_metadata(&schema),
        })
    }

    fn messages(errs: apimachinery::ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    /// A schema that cannot read `metadata` gives the body alone the errors
    /// the whole object gets: the store validates the body (no copy made).
    #[test]
    fn metadata_blind_schemas_validate_the_body_alike() {
        let schema = json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "self.spec.min <= self.spec.max", "message": "min above max"}],
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["min"],
                    "x-kubernetes-validations": [{"rule": "self.min >= 0"}],
                    "properties": {"min": {"type": "integer"}, "max": {"type": "integer", "maximum": 10},
                        "name": {"type": "string", "pattern": "^[a-z]+$"}}}}});
        assert!(!validation_reads_metadata(&schema));
        let cr = strategy(schema);
        let mut failing = 0;
        for spec in [
            json!({"min": 1, "max": 3, "name": "ok"}),
            json!({"min": 5, "max": 3}),
            json!({"min": -1, "max": 30, "name": "Not OK"}),
            json!({"max": "three"}),
            json!({}),
        ] {
            let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}},
                "spec": spec});
            let typed = DynamicObject::from_value(object.clone(), "").unwrap();
            let whole = messages(cr.validate_object(&object, None));
            failing += usize::from(!whole.is_empty());
            assert_eq!(
                messages(cr.validate_object(&typed, None)),
                whole,
                "{object}"
            );
            assert_eq!(messages(cr.validate(&typed)), whole, "{object}");
        }
        assert_eq!(failing, 4, "the objects exercise the schema and its rules");
    }

    /// Schemas that can read it: the whole object is validated.
    #[test]
    fn schemas_that_read_metadata_see_it() {
        for schema in [
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w')"}]}),
            json!({"type": "object", "properties": {"metadata": {"type": "object",
                "properties": {"name": {"type": "string", "maxLength": 3}}}}}),
            json!({"type": "object", "required": ["metadata"]}),
        ] {
            assert!(validation_reads_metadata(&schema), "{schema}");
            let cr = strategy(schema.clone());
            let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "long-name"}});
            let typed = DynamicObject::from_value(object.clone(), "").unwrap();
            let whole = messages(cr.validate_object(&object, None));
            assert_eq!(messages(cr.validate(&typed)), whole, "{schema}");
            if schema.get("required").is_none() {
                assert!(!whole.is_empty(), "{schema}: {whole:?}");
            }
        }
    }
}
