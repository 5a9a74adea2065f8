//! events.k8s.io/v1 Event, served from core/v1 Event storage (as upstream does):
//! the two versions differ only in field names.

use apimachinery::DynamicObject;
use apimachinery::{ErrorList, FieldError, FieldPath};
use serde_json::{Map, Value, json};

use crate::resource::Strategy;

/// (events.k8s.io/v1 name, core/v1 name) for every renamed field.
const RENAMES: &[(&str, &str)] = &[
    ("reportingController", "reportingComponent"),
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, from_new: bool, api_version: &str) -> Value {
    let Some(map) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let renamed = RENAMES
            .iter()
            .find(|(new, old)| if from_new { new == k } else { old == k })
            .map(|(new, old)| if from_new { *old } else { *new })
            .unwrap_or(k);
        out.insert(renamed.to_string(), v.clone());
    }
    out.insert("apiVersion".into(), json!(api_version));
    Value::Object(out)
}

pub struct EventsV1;

impl Strategy for EventsV1 {
    fn converts_on_read(&self, _stored: &crate::Object) -> bool {
        true
    }

    fn convert_from_storage(&self, obj: &Value) -> Option<Value> {
        let mut event = rename(obj, false, "events.k8s.io/v1");
        // What Go writes of events.k8s.io/v1's own fields: core's empty
        // reportingComponent and reportingInstance have omitempty here.
        crate::zero_fields::fill("events.k8s.io", "v1", "Event", &mut event);
        Some(event)
    }

    fn stored_as_served(&self) -> bool {
        false
    }

    fn to_storage(&self, obj: &Value) -> Option<Value> {
        Some(rename(obj, true, "v1"))
    }

    /// Selected on the stored core Event (`regarding.kind` is its
    /// `involvedObject.kind`).
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        super::field_labels::value("events.k8s.io", "Event", obj, field)
    }

    fn validate(&self, obj: &DynamicObject) -> ErrorList {
        let mut errs = Vec::new();
        for field in [
            "eventTime",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
        ] {
            if obj
                .get(field)
                .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
            {
                errs.push(FieldError::required(&FieldPath::new(field), ""));
            }
        }
        if let Some(t) = obj.get("type").and_then(Value::as_str)
            && !matches!(t, "Normal" | "Warning")
        {
            errs.push(FieldError::invalid(
                &FieldPath::new("type"),
                json!(t),
                "has invalid value: must be one of [Normal Warning]",
            ));
        }
        errs
    }

    fn row(&self, obj: &Value) -> Vec<Value> {
        let core = rename(obj, true, "v1");
        super::core::Events.row(&core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_between_versions() {
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi", "regarding": {"kind": "Pod"}, "reportingController": "c"});
        let core = EventsV1.to_storage(&v1).unwrap();
        assert_eq!(core["message"], "hi");
        assert_eq!(core["involvedObject"]["kind"], "Pod");
        assert_eq!(core["apiVersion"], "v1");
        let mut shown = v1.clone();
        crate::zero_fields::fill("events.k8s.io", "v1", "Event", &mut shown);
        assert_eq!(EventsV1.convert_from_storage(&core).unwrap(), shown);
    }

    /// A core Event's empty reportingComponent and reportingInstance (written
    /// by Go in v1) are left out of events.k8s.io/v1 (omitempty), as
    /// kube-apiserver 1.37.2 lists them.
    #[test]
    fn empty_reporters_are_left_out() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod"}, "reportingComponent": "", "reportingInstance": ""});
        let shown = EventsV1.convert_from_storage(&core).unwrap();
        assert_eq!(shown.get("reportingController"), None);
        assert_eq!(shown.get("reportingInstance"), None);
        assert_eq!(shown["regarding"]["kind"], "Pod");
    }
}
