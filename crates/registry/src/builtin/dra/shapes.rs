//! The Go shapes of the resource.k8s.io types whose JSON upstream's messages
//! embed: duplicate list items (declarative validation, versioned types) and
//! the claim template's immutable spec (handwritten, internal types).

use super::super::gojson::{
    BOOL_PTR, Go, INT, INT_PTR, Member, RAW, STR, STR_PTR, STRING_MAP, STRINGS,
};

const CEL: Go = Go::Struct(&[Member::new("expression", "Expression", false, &STR)]);
const SELECTOR: Go = Go::Struct(&[Member::new("cel", "CEL", true, &Go::Ptr(&CEL))]);
const TOLERATION: Go = Go::Struct(&[
    Member::new("key", "Key", true, &STR),
    Member::new("operator", "Operator", true, &STR),
    Member::new("value", "Value", true, &STR),
    Member::new("effect", "Effect", true, &STR),
    Member::new("tolerationSeconds", "TolerationSeconds", true, &INT_PTR),
]);
const CAPACITY: Go = Go::Struct(&[Member::new("requests", "Requests", true, &STRING_MAP)]);
const DERIVED: Go = Go::Struct(&[
    Member::new("name", "Name", false, &STR),
    Member::new("expression", "Expression", false, &STR),
]);

const EXACT: Go = Go::Struct(&[
    Member::new("deviceClassName", "DeviceClassName", false, &STR),
    Member::new("selectors", "Selectors", true, &Go::Slice(&SELECTOR)),
    Member::new("allocationMode", "AllocationMode", true, &STR),
    Member::new("count", "Count", true, &INT),
    Member::new("adminAccess", "AdminAccess", true, &BOOL_PTR),
    Member::new("tolerations", "Tolerations", true, &Go::Slice(&TOLERATION)),
    Member::new("capacity", "Capacity", true, &Go::Ptr(&CAPACITY)),
    Member::new(
        "derivedAttributes",
        "DerivedAttributes",
        true,
        &Go::Slice(&DERIVED),
    ),
]);

/// `DeviceSubRequest`.
pub(super) const SUB_REQUEST: Go = Go::Struct(&[
    Member::new("name", "Name", false, &STR),
    Member::new("deviceClassName", "DeviceClassName", false, &STR),
    Member::new("selectors", "Selectors", true, &Go::Slice(&SELECTOR)),
    Member::new("allocationMode", "AllocationMode", true, &STR),
    Member::new("count", "Count", true, &INT),
    Member::new("tolerations", "Tolerations", true, &Go::Slice(&TOLERATION)),
    Member::new("capacity", "Capacity", true, &Go::Ptr(&CAPACITY)),
    Member::new(
        "derivedAttributes",
        "DerivedAttributes",
        true,
        &Go::Slice(&DERIVED),
    ),
]);

/// `DeviceRequest`.
pub(super) const REQUEST: Go = Go::Struct(&[
    Member::new("name", "Name", false, &STR),
    Member::new("exactly", "Exactly", true, &Go::Ptr(&EXACT)),
    Member::new(
        "firstAvailable",
        "FirstAvailable",
        true,
        &Go::Slice(&SUB_REQUEST),
    ),
]);

const CONSTRAINT: Go = Go::Struct(&[
    Member::new("requests", "Requests", true, &STRINGS),
    Member::new("matchAttribute", "MatchAttribute", true, &STR_PTR),
    Member::new("distinctAttribute", "DistinctAttribute", true, &STR_PTR),
]);
const OPAQUE: Go = Go::Struct(&[
    Member::new("driver", "Driver", false, &STR),
    Member::new("parameters", "Parameters", false, &RAW),
]);
/// `DeviceClaimConfiguration`, its embedded `DeviceConfiguration` flattened.
const CLAIM_CONFIG: Go = Go::Struct(&[
    Member::new("requests", "Requests", true, &STRINGS),
    Member::new("opaque", "Opaque", true, &Go::Ptr(&OPAQUE)),
]);
const DEVICE_CLAIM: Go = Go::Struct(&[
    Member::new("requests", "Requests", true, &Go::Slice(&REQUEST)),
    Member::new("constraints", "Constraints", true, &Go::Slice(&CONSTRAINT)),
    Member::new("config", "Config", true, &Go::Slice(&CLAIM_CONFIG)),
]);
const CLAIM_SPEC: Go = Go::Struct(&[Member::new("devices", "Devices", false, &DEVICE_CLAIM)]);

/// `ResourceClaimTemplateSpec`: its embedded `ObjectMeta` flattened (JSON
/// tags, so empty members are left out even from the internal type).
pub(super) const TEMPLATE_SPEC: Go = Go::Struct(&[
    Member::tagged("name", true, &STR),
    Member::tagged("generateName", true, &STR),
    Member::tagged("namespace", true, &STR),
    Member::tagged("uid", true, &STR),
    Member::tagged("resourceVersion", true, &STR),
    Member::tagged("generation", true, &INT),
    Member::tagged("labels", true, &STRING_MAP),
    Member::tagged("annotations", true, &STRING_MAP),
    Member::tagged("finalizers", true, &STRINGS),
    Member::new("spec", "Spec", false, &CLAIM_SPEC),
]);

const COUNTER: Go = Go::Struct(&[Member::new("value", "Value", false, &STR)]);

/// `CounterSet`.
pub(super) const COUNTER_SET: Go = Go::Struct(&[
    Member::new("name", "Name", false, &STR),
    Member::new("counters", "Counters", true, &Go::Map(&COUNTER)),
]);

/// `DeviceCounterConsumption`.
pub(super) const COUNTER_CONSUMPTION: Go = Go::Struct(&[
    Member::new("counterSet", "CounterSet", false, &STR),
    Member::new("counters", "Counters", true, &Go::Map(&COUNTER)),
    Member::new("compatibilityGroups", "CompatibilityGroups", true, &STRINGS),
]);

const SELECTOR_REQUIREMENT: Go = Go::Struct(&[
    Member::new("key", "Key", false, &STR),
    Member::new("operator", "Operator", false, &STR),
    Member::new("values", "Values", true, &STRINGS),
]);
const NODE_SELECTOR_TERM: Go = Go::Struct(&[
    Member::new(
        "matchExpressions",
        "MatchExpressions",
        true,
        &Go::Slice(&SELECTOR_REQUIREMENT),
    ),
    Member::new(
        "matchFields",
        "MatchFields",
        true,
        &Go::Slice(&SELECTOR_REQUIREMENT),
    ),
]);

/// `[]core.NodeSelectorTerm`.
pub(super) const NODE_SELECTOR_TERMS: Go = Go::Slice(&NODE_SELECTOR_TERM);
