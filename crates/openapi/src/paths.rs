//! Paths and operations for served resources, modelled once and rendered as
//! OpenAPI 3.0 or Swagger 2.0, named and shaped like kube-apiserver's.

use serde_json::{Map, Value, json};

use crate::builtin::{API_RESOURCE_LIST, DELETE_OPTIONS, PATCH, STATUS};
use crate::convert::{V2_PREFIX, V3_PREFIX};
use crate::{Gvk, ServedResource};

/// Component names of a served kind.
pub(crate) struct KindSchemas {
    pub(crate) kind: String,
    pub(crate) list: String,
    /// Whether PATCH accepts `application/strategic-merge-patch+json` (built-in
    /// kinds; custom resources don't support it, and kubectl reads this to choose
    /// between a strategic and a JSON merge patch).
    pub(crate) strategic_merge: bool,
}

#[derive(Clone)]
struct Param {
    name: &'static str,
    location: &'static str,
    ty: &'static str,
    description: String,
    required: bool,
}

fn query(name: &'static str, ty: &'static str, description: &str) -> Param {
    Param {
        name,
        location: "query",
        ty,
        description: description.into(),
        required: false,
    }
}

fn path_param(name: &'static str, description: String) -> Param {
    Param {
        name,
        location: "path",
        ty: "string",
        description,
        required: true,
    }
}

const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_MANAGER_PATCH: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.";
const PRETTY: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.";
const CONTINUE: &str = "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token.\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.";
const FIELD_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.";
const LABEL_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.";
const LIMIT: &str = "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests.";
const RESOURCE_VERSION: &str = "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const SEND_INITIAL_EVENTS: &str = "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set.";
const TIMEOUT_SECONDS: &str = "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.";
const WATCH: &str = "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.";
const GRACE_PERIOD_SECONDS: &str = "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.";
const IGNORE_STORE_READ_ERROR: &str = "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it";
const ORPHAN_DEPENDENTS: &str = "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.";
const PROPAGATION_POLICY: &str = "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.";

fn write_params(patch: bool) -> Vec<Param> {
    let mut p = vec![
        query("dryRun", "string", DRY_RUN),
        query(
            "fieldManager",
            "string",
            if patch {
                FIELD_MANAGER_PATCH
            } else {
                FIELD_MANAGER
            },
        ),
        query("fieldValidation", "string", FIELD_VALIDATION),
    ];
    if patch {
        p.push(query("force", "boolean", FORCE));
    }
    p
}

fn list_params() -> Vec<Param> {
    vec![
        query("allowWatchBookmarks", "boolean", ALLOW_WATCH_BOOKMARKS),
        query("continue", "string", CONTINUE),
        query("fieldSelector", "string", FIELD_SELECTOR),
        query("labelSelector", "string", LABEL_SELECTOR),
        query("limit", "integer", LIMIT),
        query("resourceVersion", "string", RESOURCE_VERSION),
        query("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
        query("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
        query("timeoutSeconds", "integer", TIMEOUT_SECONDS),
        query("watch", "boolean", WATCH),
    ]
}

fn delete_params() -> Vec<Param> {
    vec![
        query("dryRun", "string", DRY_RUN),
        query("gracePeriodSeconds", "integer", GRACE_PERIOD_SECONDS),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "boolean",
            IGNORE_STORE_READ_ERROR,
        ),
        query("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
        query("propagationPolicy", "string", PROPAGATION_POLICY),
    ]
}

fn delete_collection_params() -> Vec<Param> {
    let mut p = delete_params();
    p.extend([
        query("continue", "string", CONTINUE),
        query("fieldSelector", "string", FIELD_SELECTOR),
        query("labelSelector", "string", LABEL_SELECTOR),
        query("limit", "integer", LIMIT),
        query("resourceVersion", "string", RESOURCE_VERSION),
        query("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
        query("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
        query("timeoutSeconds", "integer", TIMEOUT_SECONDS),
    ]);
    p
}

#[derive(Clone, Copy, PartialEq)]
enum Body {
    Object,
    Patch { strategic_merge: bool },
    DeleteOptions,
}

struct Response {
    code: &'static str,
    description: &'static str,
}

const OK: Response = Response {
    code: "200",
    description: "OK",
};
const CREATED: Response = Response {
    code: "201",
    description: "Created",
};
const ACCEPTED: Response = Response {
    code: "202",
    description: "Accepted",
};

struct Operation {
    method: &'static str,
    id: String,
    description: String,
    action: Option<&'static str>,
    gvk: Option<Gvk>,
    params: Vec<Param>,
    body: Option<(Body, String)>,
    /// Response schema and the codes answering with it.
    responses: (String, Vec<Response>),
    /// Lists answer watch streams too.
    streams: bool,
}

pub(crate) struct PathItem {
    path: String,
    params: Vec<Param>,
    ops: Vec<Operation>,
}

/// `Coordination`, `Core`, `RbacAuthorization`, `StableExampleCom`: the group as it
/// appears in operation IDs.
fn group_ident(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    group
        .split(['.', '-'])
        .map(capitalize)
        .collect::<Vec<_>>()
        .join("")
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `core_v1`, `coordination_v1`, `rbacAuthorization_v1`.
pub(crate) fn tag(group: &str, version: &str) -> String {
    let ident = group_ident(group);
    let mut c = ident.chars();
    let lower: String = match c.next() {
        Some(first) => first.to_lowercase().chain(c).collect(),
        None => String::new(),
    };
    format!("{lower}_{version}")
}

pub(crate) fn url_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The GV root (`GET /api/v1/`: the APIResourceList).
pub(crate) fn group_version_root(group: &str, version: &str) -> PathItem {
    let gv = format!("{}{}", group_ident(group), capitalize(version));
    PathItem {
        path: format!("{}/", url_prefix(group, version)),
        params: Vec::new(),
        ops: vec![Operation {
            method: "get",
            id: format!("get{gv}APIResources"),
            description: "get available resources".into(),
            action: None,
            gvk: None,
            params: Vec::new(),
            body: None,
            responses: (API_RESOURCE_LIST.into(), vec![OK]),
            streams: false,
        }],
    }
}

/// The paths of one served resource.
pub(crate) fn resource_paths(r: &ServedResource, schemas: &KindSchemas) -> Vec<PathItem> {
    let gv = format!("{}{}", group_ident(&r.group), capitalize(&r.version));
    let ns = if r.namespaced { "Namespaced" } else { "" };
    let kind = &r.kind;
    let gvk = r.gvk();
    let prefix = url_prefix(&r.group, &r.version);
    let pretty = query("pretty", "string", PRETTY);
    let namespace = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects".into(),
    );
    let name = path_param("name", format!("name of the {kind}"));
    let op = |method, id: String, description: String, action| Operation {
        method,
        id,
        description,
        action: Some(action),
        gvk: Some(gvk.clone()),
        params: Vec::new(),
        body: None,
        responses: (schemas.kind.clone(), vec![OK]),
        streams: false,
    };
    let patch_body = Body::Patch {
        strategic_merge: schemas.strategic_merge,
    };

    let (collection, mut collection_params) = if r.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural),
            vec![namespace.clone()],
        )
    } else {
        (format!("{prefix}/{}", r.plural), Vec::new())
    };
    collection_params.push(pretty.clone());
    let item = format!("{collection}/{{name}}");
    let mut item_params = vec![name];
    if r.namespaced {
        item_params.push(namespace);
    }
    item_params.push(pretty.clone());

    let mut out = Vec::new();

    let mut ops = Vec::new();
    if r.has_verb("list") {
        let mut list = op(
            "get",
            format!("list{gv}{ns}{kind}"),
            format!("list or watch objects of kind {kind}"),
            "list",
        );
        list.params = list_params();
        list.responses = (schemas.list.clone(), vec![OK]);
        list.streams = true;
        ops.push(list);
    }
    if r.has_verb("create") {
        let mut create = op(
            "post",
            format!("create{gv}{ns}{kind}"),
            format!("create a {kind}"),
            "post",
        );
        create.params = write_params(false);
        create.body = Some((Body::Object, schemas.kind.clone()));
        create.responses.1 = vec![OK, CREATED, ACCEPTED];
        ops.push(create);
    }
    if r.has_verb("deletecollection") {
        let mut delete = op(
            "delete",
            format!("delete{gv}Collection{ns}{kind}"),
            format!("delete collection of {kind}"),
            "deletecollection",
        );
        delete.params = delete_collection_params();
        delete.body = Some((Body::DeleteOptions, DELETE_OPTIONS.into()));
        delete.responses = (STATUS.into(), vec![OK]);
        ops.push(delete);
    }
    if !ops.is_empty() {
        out.push(PathItem {
            path: collection,
            params: collection_params,
            ops,
        });
    }

    // read / replace / patch of one object, and of its status: one shape, two names.
    let read_replace_patch = |suffix: &str, what: &str| {
        let mut ops = Vec::new();
        if r.has_verb("get") {
            ops.push(op(
                "get",
                format!("read{gv}{ns}{kind}{suffix}"),
                format!("read {what}"),
                "get",
            ));
        }
        if r.has_verb("update") {
            let mut put = op(
                "put",
                format!("replace{gv}{ns}{kind}{suffix}"),
                format!("replace {what}"),
                "put",
            );
            put.params = write_params(false);
            put.body = Some((Body::Object, schemas.kind.clone()));
            put.responses.1 = vec![OK, CREATED];
            ops.push(put);
        }
        if r.has_verb("patch") {
            let mut patch = op(
                "patch",
                format!("patch{gv}{ns}{kind}{suffix}"),
                format!("partially update {what}"),
                "patch",
            );
            patch.params = write_params(true);
            patch.body = Some((patch_body, PATCH.into()));
            patch.responses.1 = vec![OK, CREATED];
            ops.push(patch);
        }
        ops
    };

    let mut ops = read_replace_patch("", &format!("the specified {kind}"));
    if r.has_verb("delete") {
        let mut delete = op(
            "delete",
            format!("delete{gv}{ns}{kind}"),
            format!("delete a {kind}"),
            "delete",
        );
        delete.params = delete_params();
        delete.body = Some((Body::DeleteOptions, DELETE_OPTIONS.into()));
        delete.responses = (STATUS.into(), vec![OK, ACCEPTED]);
        ops.push(delete);
    }
    if !ops.is_empty() {
        out.push(PathItem {
            path: item.clone(),
            params: item_params.clone(),
            ops,
        });
    }

    if r.has_status {
        let ops = read_replace_patch("Status", &format!("status of the specified {kind}"));
        if !ops.is_empty() {
            out.push(PathItem {
                path: format!("{item}/status"),
                params: item_params,
                ops,
            });
        }
    }

    if r.namespaced && r.has_verb("list") {
        let mut list = op(
            "get",
            format!("list{gv}{kind}ForAllNamespaces"),
            format!("list or watch objects of kind {kind}"),
            "list",
        );
        list.responses = (schemas.list.clone(), vec![OK]);
        list.streams = true;
        let mut params = list_params();
        params.push(pretty);
        params.sort_by_key(|p| p.name);
        out.push(PathItem {
            path: format!("{prefix}/{}", r.plural),
            params,
            ops: vec![list],
        });
    }
    out
}

const PATCH_TYPES: [&str; 4] = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];
const PRODUCES: [&str; 2] = ["application/json", "application/yaml"];
const PRODUCES_STREAMS: [&str; 3] = [
    "application/json",
    "application/json;stream=watch",
    "application/yaml",
];

fn patch_types(strategic_merge: bool) -> Vec<&'static str> {
    PATCH_TYPES
        .into_iter()
        .filter(|t| strategic_merge || *t != "application/strategic-merge-patch+json")
        .collect()
}

fn param_v3(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": p.location,
        "name": p.name,
        "schema": {"type": p.ty, "uniqueItems": true},
    });
    if p.required {
        v["required"] = json!(true);
    }
    v
}

fn param_v2(p: &Param) -> Value {
    let mut v = json!({
        "description": p.description,
        "in": p.location,
        "name": p.name,
        "type": p.ty,
        "uniqueItems": true,
    });
    if p.required {
        v["required"] = json!(true);
    }
    v
}

/// Renders paths as an OpenAPI 3.0 `paths` object.
pub(crate) fn render_v3(items: &[PathItem], tag: &str) -> Map<String, Value> {
    let mut paths = Map::new();
    for item in items {
        let mut path = Map::new();
        if !item.params.is_empty() {
            path.insert(
                "parameters".into(),
                item.params.iter().map(param_v3).collect(),
            );
        }
        for op in &item.ops {
            let mut o = Map::new();
            o.insert("description".into(), json!(op.description));
            o.insert("operationId".into(), json!(op.id));
            if !op.params.is_empty() {
                o.insert(
                    "parameters".into(),
                    op.params.iter().map(param_v3).collect(),
                );
            }
            if let Some((body, schema)) = &op.body {
                let content_schema = json!({"schema": {"$ref": format!("{V3_PREFIX}{schema}")}});
                let mut content = Map::new();
                match body {
                    Body::Patch { strategic_merge } => {
                        for t in patch_types(*strategic_merge) {
                            content.insert(t.into(), content_schema.clone());
                        }
                    }
                    Body::Object | Body::DeleteOptions => {
                        content.insert("*/*".into(), content_schema);
                    }
                }
                let mut rb = json!({ "content": content });
                if *body != Body::DeleteOptions {
                    rb["required"] = json!(true);
                }
                o.insert("requestBody".into(), rb);
            }
            let (schema, codes) = &op.responses;
            let types: &[&str] = if op.streams {
                &PRODUCES_STREAMS
            } else {
                &PRODUCES
            };
            let content: Map<String, Value> = types
                .iter()
                .map(|t| {
                    (
                        t.to_string(),
                        json!({"schema": {"$ref": format!("{V3_PREFIX}{schema}")}}),
                    )
                })
                .collect();
            let mut responses: Map<String, Value> = codes
                .iter()
                .map(|r| {
                    (
                        r.code.to_string(),
                        json!({"content": content, "description": r.description}),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            o.insert("responses".into(), Value::Object(responses));
            o.insert("tags".into(), json!([tag]));
            if let Some(action) = op.action {
                o.insert("x-kubernetes-action".into(), json!(action));
            }
            if let Some(gvk) = &op.gvk {
                o.insert("x-kubernetes-group-version-kind".into(), gvk.to_json());
            }
            path.insert(op.method.into(), Value::Object(o));
        }
        paths.insert(item.path.clone(), Value::Object(path));
    }
    paths
}

/// Renders paths as a Swagger 2.0 `paths` object.
pub(crate) fn render_v2(items: &[PathItem], tag: &str, out: &mut Map<String, Value>) {
    for item in items {
        let mut path = Map::new();
        if !item.params.is_empty() {
            path.insert(
                "parameters".into(),
                item.params.iter().map(param_v2).collect(),
            );
        }
        for op in &item.ops {
            let mut o = Map::new();
            let consumes: Vec<&str> = match op.body {
                Some((Body::Patch { strategic_merge }, _)) => patch_types(strategic_merge),
                _ => vec!["*/*"],
            };
            o.insert("consumes".into(), json!(consumes));
            o.insert("description".into(), json!(op.description));
            o.insert("operationId".into(), json!(op.id));
            let mut params: Vec<Value> = Vec::new();
            if let Some((body, schema)) = &op.body {
                let mut p = json!({
                    "in": "body",
                    "name": "body",
                    "schema": {"$ref": format!("{V2_PREFIX}{schema}")},
                });
                if *body != Body::DeleteOptions {
                    p["required"] = json!(true);
                }
                params.push(p);
            }
            params.extend(op.params.iter().map(param_v2));
            if !params.is_empty() {
                o.insert("parameters".into(), Value::Array(params));
            }
            let produces: &[&str] = if op.streams {
                &PRODUCES_STREAMS
            } else {
                &PRODUCES
            };
            o.insert("produces".into(), json!(produces));
            let (schema, codes) = &op.responses;
            let mut responses: Map<String, Value> = codes
                .iter()
                .map(|r| {
                    (
                        r.code.to_string(),
                        json!({
                            "description": r.description,
                            "schema": {"$ref": format!("{V2_PREFIX}{schema}")},
                        }),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            o.insert("responses".into(), Value::Object(responses));
            o.insert("schemes".into(), json!(["https"]));
            o.insert("tags".into(), json!([tag]));
            if let Some(action) = op.action {
                o.insert("x-kubernetes-action".into(), json!(action));
            }
            if let Some(gvk) = &op.gvk {
                o.insert("x-kubernetes-group-version-kind".into(), gvk.to_json());
            }
            path.insert(op.method.into(), Value::Object(o));
        }
        out.insert(item.path.clone(), Value::Object(path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idents() {
        assert_eq!(group_ident(""), "Core");
        assert_eq!(group_ident("coordination.k8s.io"), "Coordination");
        assert_eq!(
            group_ident("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(group_ident("stable.example.com"), "StableExampleCom");
        assert_eq!(tag("", "v1"), "core_v1");
        assert_eq!(tag("events.k8s.io", "v1"), "events_v1");
        assert_eq!(
            tag("flowcontrol.apiserver.k8s.io", "v1"),
            "flowcontrolApiserver_v1"
        );
    }
}
