//! Paths and operations for served resources, generated the way kube-apiserver
//! 1.37 generates them: routes per resource and subresource (upstream's generic
//! `APIInstaller`, or apiextensions-apiserver's builder for a CRD's versions),
//! grouped into path items with the parameters every operation of a path shares
//! moved to the path (kube-openapi's builder), rendered as OpenAPI 3.0 or
//! Swagger 2.0.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::builtin::{
    API_GROUP, API_GROUP_LIST, API_RESOURCE_LIST, API_VERSIONS, DELETE_OPTIONS, PATCH, STATUS,
    VERSION_INFO, WATCH_EVENT,
};
use crate::convert::{V2_PREFIX, V3_PREFIX};
use crate::params::{self, Field};
use crate::{Gvk, ServedResource, Subresource};

/// Component names of a served kind.
pub(crate) struct KindSchemas {
    pub(crate) kind: String,
    pub(crate) list: String,
    /// Whether PATCH accepts `application/strategic-merge-patch+json` (built-in
    /// kinds; custom resources don't support it, and kubectl reads this to choose
    /// between a strategic and a JSON merge patch).
    pub(crate) strategic_merge: bool,
    /// Whether the kind has a protobuf form (built-in kinds).
    pub(crate) protobuf: bool,
}

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON_WATCH: &str = "application/json;stream=watch";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const ANY: &str = "*/*";
const TEXT: &str = "text/plain";
const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The media types a group's serializer offers (upstream's
/// `MediaTypesForSerializer`): objects, and watch streams.
fn media_types(protobuf: bool) -> (Vec<&'static str>, Vec<&'static str>) {
    if protobuf {
        (vec![JSON, YAML, PROTOBUF], vec![JSON_WATCH, PROTOBUF_WATCH])
    } else {
        (vec![JSON, YAML], vec![JSON_WATCH])
    }
}

#[derive(Clone)]
struct Param {
    name: &'static str,
    location: &'static str,
    ty: &'static str,
    description: Cow<'static, str>,
    required: bool,
}

impl Param {
    fn query(&(name, ty, description): &Field) -> Param {
        Param {
            name,
            location: "query",
            ty,
            description: Cow::Borrowed(description),
            required: false,
        }
    }

    fn path(name: &'static str, description: impl Into<Cow<'static, str>>) -> Param {
        Param {
            name,
            location: "path",
            ty: "string",
            description: description.into(),
            required: true,
        }
    }

    fn key(&self) -> (&'static str, &'static str) {
        (self.name, self.location)
    }
}

fn pretty() -> Param {
    Param::query(&("pretty", "string", params::PRETTY))
}

fn namespace() -> Param {
    Param::path("namespace", params::NAMESPACE)
}

/// What an operation answers.
#[derive(Clone)]
enum Answer {
    Schema(String),
    /// Free text (logs, connections).
    Text,
}

impl Answer {
    fn schema(name: &str) -> Answer {
        Answer::Schema(name.to_string())
    }

    fn json(&self, prefix: &str) -> Value {
        match self {
            Answer::Schema(name) => json!({"$ref": format!("{prefix}{name}")}),
            Answer::Text => json!({"type": "string"}),
        }
    }
}

const OK: &[(&str, &str)] = &[("200", "OK")];
const OK_CREATED: &[(&str, &str)] = &[("200", "OK"), ("201", "Created")];
const OK_ACCEPTED: &[(&str, &str)] = &[("200", "OK"), ("202", "Accepted")];
const OK_CREATED_ACCEPTED: &[(&str, &str)] =
    &[("200", "OK"), ("201", "Created"), ("202", "Accepted")];

/// One operation at one path, as upstream's `restful.Route` describes it.
pub(crate) struct Route {
    path: String,
    method: &'static str,
    /// The route's operation name (`listNamespacedLease`); the document's ID
    /// puts the group and version in ([`operation_id_and_tag`]).
    operation: String,
    description: String,
    action: Option<&'static str>,
    gvk: Option<Gvk>,
    params: Vec<Param>,
    /// Request body: schema, required.
    body: Option<(String, bool)>,
    consumes: Vec<&'static str>,
    produces: Vec<&'static str>,
    responses: &'static [(&'static str, &'static str)],
    answer: Answer,
}

impl Route {
    fn new(path: String, method: &'static str, operation: String, description: String) -> Route {
        Route {
            path,
            method,
            operation,
            description,
            action: None,
            gvk: None,
            params: Vec::new(),
            body: None,
            consumes: vec![ANY],
            produces: Vec::new(),
            responses: OK,
            answer: Answer::Text,
        }
    }
}

/// Routes at one path; the parameters every route has are the path's.
pub(crate) struct PathItem {
    path: String,
    params: Vec<Param>,
    ops: Vec<Route>,
}

/// Upstream's `ToValidOperationID`: letters (and digits after the first
/// character) kept, anything else dropped and the next letter capitalized.
fn valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_numeric()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// Upstream's `GetOperationIDAndTags`: the group and version (from the path) go
/// after the operation's verb (`listNamespacedLease` at
/// `/apis/coordination.k8s.io/v1/...` → `listCoordinationV1NamespacedLease`,
/// tag `coordination_v1`).
fn operation_id_and_tag(operation: &str, path: &str) -> (String, String) {
    // Upstream's operation verbs; the shortest that starts the operation is its.
    const VERBS: &str =
        "get log read replace patch delete deletecollection watch connect proxy list create";
    let verb = VERBS
        .split(' ')
        .filter(|v| operation.starts_with(v))
        .min_by_key(|v| v.len())
        .unwrap_or("");
    let rest = &operation[verb.len()..];
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts.first() == Some(&"api") {
        parts.splice(0..1, ["apis", "core"]);
    }
    let mut prefix = verb.to_string();
    let tag = if parts.len() >= 2 && parts[0] == "apis" {
        let group = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        prefix.push_str(&valid_operation_id(group, !prefix.is_empty()));
        let mut tag = valid_operation_id(group, false);
        if let Some(version) = parts.get(2) {
            prefix.push_str(&valid_operation_id(version, !prefix.is_empty()));
            tag = format!("{tag}_{}", valid_operation_id(version, false));
        }
        tag
    } else {
        valid_operation_id(parts[0], false)
    };
    let id = format!("{prefix}{}", valid_operation_id(rest, !prefix.is_empty()));
    (id, tag)
}

fn url_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Upstream's `GetArticleForNoun` with spaces around: ` a `, ` an `, or ` ` for
/// a plural-looking kind (`Endpoints`).
fn article(noun: &str) -> &'static str {
    if noun.ends_with('s') && !noun.ends_with("ss") {
        " "
    } else if noun.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']) {
        " an "
    } else {
        " a "
    }
}

/// `cases.Title` of a subresource name (`ephemeralcontainers` →
/// `Ephemeralcontainers`).
fn title(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first
            .to_uppercase()
            .chain(c.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// A route without a kind (discovery documents): `GET path`, answering `schema`
/// in `media`.
fn discovery_route(
    path: String,
    operation: &str,
    description: &str,
    schema: &str,
    media: &[&'static str],
) -> Route {
    let mut route = Route::new(path, "get", operation.into(), description.into());
    route.consumes = media.to_vec();
    route.produces = media.to_vec();
    route.answer = Answer::schema(schema);
    route
}

/// The group-version root (`GET /api/v1/`: the APIResourceList).
pub(crate) fn group_version_root(group: &str, version: &str, protobuf: bool) -> Route {
    let media = media_types(protobuf).0;
    discovery_route(
        format!("{}/", url_prefix(group, version)),
        "getAPIResources",
        "get available resources",
        API_RESOURCE_LIST,
        &media,
    )
}

/// `/api/`, `/apis/`, each group's `/apis/<group>/` and `/version/`: the paths
/// of kube-apiserver's Swagger 2.0 document outside its group-versions.
pub(crate) fn discovery_routes<'a>(groups: impl IntoIterator<Item = &'a str>) -> Vec<Route> {
    let media = media_types(true).0;
    let mut routes = vec![
        discovery_route(
            "/api/".into(),
            "getAPIVersions",
            "get available API versions",
            API_VERSIONS,
            &media,
        ),
        discovery_route(
            "/apis/".into(),
            "getAPIVersions",
            "get available API versions",
            API_GROUP_LIST,
            &media,
        ),
        discovery_route(
            "/version/".into(),
            "getCodeVersion",
            "get the version information for this server",
            VERSION_INFO,
            &[JSON],
        ),
    ];
    for group in groups {
        routes.push(discovery_route(
            format!("/apis/{group}/"),
            "getAPIGroup",
            "get information of a group",
            API_GROUP,
            &media,
        ));
    }
    routes
}

/// A verb of an upstream storage (`request.Method*`), in the installer's order.
#[derive(Clone, Copy, PartialEq)]
enum Verb {
    List,
    Post,
    DeleteCollection,
    WatchList,
    Get,
    Put,
    Patch,
    Delete,
    Watch,
    Connect,
}

/// What an operation reads.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    Nothing,
    Object,
    Patch,
    DeleteOptions,
}

/// What an operation answers.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    Object,
    List,
    Status,
    /// The object, or a Status (`delete_returns_object`).
    Deleted,
    WatchEvent,
    Text,
}

/// How the generic installer (`registerResourceHandlers`) documents a verb: the
/// route's operation (its name's first word), `x-kubernetes-action`, the
/// descriptions of a resource's and of a subresource's route (`{kind}`, `{sub}`,
/// `{a}`: the kind's article, `{list}`: `list or watch` for a watchable kind,
/// `{method}`), query parameters, what it reads and answers with which codes,
/// and whether watch streams are among its media types.
struct VerbDoc {
    verb: Verb,
    operation: &'static str,
    action: &'static str,
    resource: &'static str,
    subresource: &'static str,
    options: &'static [Field],
    reads: Reads,
    writes: Writes,
    responses: &'static [(&'static str, &'static str)],
    streams: bool,
}

const WATCH_DEPRECATED: &str =
    ". deprecated: use the 'watch' parameter with a list operation instead";

const VERB_DOCS: &[VerbDoc] = &[
    VerbDoc {
        verb: Verb::List,
        operation: "list",
        action: "list",
        resource: "{list} objects of kind {kind}",
        subresource: "{list} {sub} of objects of kind {kind}",
        options: params::LIST_OPTIONS,
        reads: Reads::Nothing,
        writes: Writes::List,
        responses: OK,
        streams: true,
    },
    VerbDoc {
        verb: Verb::Post,
        operation: "create",
        action: "post",
        resource: "create{a}{kind}",
        subresource: "create {sub} of{a}{kind}",
        options: params::CREATE_OPTIONS,
        reads: Reads::Object,
        writes: Writes::Object,
        responses: OK_CREATED_ACCEPTED,
        streams: false,
    },
    VerbDoc {
        verb: Verb::DeleteCollection,
        operation: "deletecollection",
        action: "deletecollection",
        resource: "delete collection of {kind}",
        subresource: "delete collection of {sub} of a {kind}",
        options: params::DELETE_COLLECTION_OPTIONS,
        reads: Reads::DeleteOptions,
        writes: Writes::Status,
        responses: OK,
        streams: false,
    },
    VerbDoc {
        verb: Verb::WatchList,
        operation: "watch",
        action: "watchlist",
        resource: "watch individual changes to a list of {kind}{deprecated}.",
        subresource: "watch individual changes to a list of {sub} of {kind}{deprecated}.",
        options: params::LIST_OPTIONS,
        reads: Reads::Nothing,
        writes: Writes::WatchEvent,
        responses: OK,
        streams: true,
    },
    VerbDoc {
        verb: Verb::Get,
        operation: "read",
        action: "get",
        resource: "read the specified {kind}",
        subresource: "read {sub} of the specified {kind}",
        options: &[],
        reads: Reads::Nothing,
        writes: Writes::Object,
        responses: OK,
        streams: false,
    },
    VerbDoc {
        verb: Verb::Put,
        operation: "replace",
        action: "put",
        resource: "replace the specified {kind}",
        subresource: "replace {sub} of the specified {kind}",
        options: params::CREATE_OPTIONS,
        reads: Reads::Object,
        writes: Writes::Object,
        responses: OK_CREATED,
        streams: false,
    },
    VerbDoc {
        verb: Verb::Patch,
        operation: "patch",
        action: "patch",
        resource: "partially update the specified {kind}",
        subresource: "partially update {sub} of the specified {kind}",
        options: params::PATCH_OPTIONS,
        reads: Reads::Patch,
        writes: Writes::Object,
        responses: OK_CREATED,
        streams: false,
    },
    VerbDoc {
        verb: Verb::Delete,
        operation: "delete",
        action: "delete",
        resource: "delete{a}{kind}",
        subresource: "delete {sub} of{a}{kind}",
        options: params::DELETE_OPTIONS,
        reads: Reads::DeleteOptions,
        writes: Writes::Deleted,
        responses: OK_ACCEPTED,
        streams: false,
    },
    VerbDoc {
        verb: Verb::Watch,
        operation: "watch",
        action: "watch",
        resource: "watch changes to an object of kind {kind}{deprecated}, filtered to a single item with the 'fieldSelector' parameter.",
        subresource: "watch changes to {sub} of an object of kind {kind}{deprecated}, filtered to a single item with the 'fieldSelector' parameter.",
        options: params::LIST_OPTIONS,
        reads: Reads::Nothing,
        writes: Writes::WatchEvent,
        responses: OK,
        streams: true,
    },
    VerbDoc {
        verb: Verb::Connect,
        operation: "connect",
        action: "connect",
        resource: "connect {method} requests to {kind}",
        subresource: "connect {method} requests to {sub} of {kind}",
        options: &[],
        reads: Reads::Nothing,
        writes: Writes::Text,
        responses: OK,
        streams: false,
    },
];

/// How upstream serves a subresource that is no plain storage.
#[derive(Clone, Copy, PartialEq)]
enum Handler {
    /// `rest.GetterWithOptions` (`pods/log`): a GET answering text.
    Log,
    /// `rest.Connecter`: a route per HTTP method.
    Connect,
    /// `rest.Connecter` proxying every method, at `.../{path}` too.
    Proxy,
}

/// Those subresources (parent kind, name), and the query parameters of their
/// options kind.
const SPECIAL: &[(&str, &str, Handler, &[Field])] = &[
    ("Pod", "log", Handler::Log, params::POD_LOG_OPTIONS),
    (
        "Pod",
        "attach",
        Handler::Connect,
        params::POD_ATTACH_OPTIONS,
    ),
    ("Pod", "exec", Handler::Connect, params::POD_EXEC_OPTIONS),
    (
        "Pod",
        "portforward",
        Handler::Connect,
        params::POD_PORT_FORWARD_OPTIONS,
    ),
    ("Pod", "proxy", Handler::Proxy, params::POD_PROXY_OPTIONS),
    ("Node", "proxy", Handler::Proxy, params::NODE_PROXY_OPTIONS),
    (
        "Service",
        "proxy",
        Handler::Proxy,
        params::SERVICE_PROXY_OPTIONS,
    ),
];

/// One upstream storage: the resource itself (`sub` empty) or a subresource.
struct Storage<'a> {
    sub: &'a str,
    /// The kind the storage is registered with: the routes' GVK extension, and
    /// named in the `name` parameter's description.
    kind: Gvk,
    /// What reads answer and writes carry.
    object: String,
    verbs: Vec<Verb>,
    special: Option<(Handler, &'static [Field])>,
}

/// The verbs of a storage serving the kube verbs `has`.
fn storage_verbs(has: impl Fn(&str) -> bool) -> Vec<Verb> {
    let list = has("list");
    [
        (list, Verb::List),
        (has("create"), Verb::Post),
        (has("deletecollection"), Verb::DeleteCollection),
        (list && has("watch"), Verb::WatchList),
        (has("get"), Verb::Get),
        (has("update"), Verb::Put),
        (has("patch"), Verb::Patch),
        (has("delete"), Verb::Delete),
        (has("watch"), Verb::Watch),
    ]
    .into_iter()
    .filter_map(|(on, verb)| on.then_some(verb))
    .collect()
}

/// The routes of a resource and its subresources: upstream's generic installer,
/// or apiextensions-apiserver's builder for a CRD's version.
pub(crate) fn resource_routes(
    r: &ServedResource,
    schemas: &KindSchemas,
    component: impl Fn(&Gvk) -> String,
    out: &mut Vec<Route>,
) {
    if r.custom_resource {
        return custom_resource_routes(r, schemas, out);
    }
    let resource = Storage {
        sub: "",
        kind: r.gvk(),
        object: schemas.kind.clone(),
        verbs: storage_verbs(|v| r.has_verb(v)),
        special: None,
    };
    storage_routes(r, &resource, schemas, out);
    let status = r
        .has_status
        .then(|| Subresource::new("status", r.gvk(), &["get", "patch", "update"]));
    for sub in status.iter().chain(&r.subresources) {
        let special = SPECIAL
            .iter()
            .find(|(parent, name, ..)| *parent == r.kind && *name == sub.name)
            .map(|&(_, _, handler, options)| (handler, options));
        let verbs = match special {
            Some((Handler::Connect | Handler::Proxy, _)) => vec![Verb::Connect],
            _ => storage_verbs(|v| sub.has_verb(v)),
        };
        let object = if sub.gvk == r.gvk() {
            schemas.kind.clone()
        } else {
            component(&sub.gvk)
        };
        let storage = Storage {
            sub: &sub.name,
            kind: sub.gvk.clone(),
            object,
            verbs,
            special,
        };
        storage_routes(r, &storage, schemas, out);
    }
}

/// Upstream's `registerResourceHandlers` for one storage of `r`.
fn storage_routes(
    r: &ServedResource,
    s: &Storage<'_>,
    schemas: &KindSchemas,
    out: &mut Vec<Route>,
) {
    let prefix = url_prefix(&r.group, &r.version);
    let (mut resource_path, mut resource_params) = if r.namespaced {
        (
            format!("namespaces/{{namespace}}/{}", r.plural),
            vec![namespace()],
        )
    } else {
        (r.plural.clone(), Vec::new())
    };
    let mut item_path = format!("{resource_path}/{{name}}");
    let mut name_params = resource_params.clone();
    name_params.push(Param::path("name", format!("name of the {}", s.kind.kind)));
    if !s.sub.is_empty() {
        item_path = format!("{item_path}/{}", s.sub);
        resource_path = item_path.clone();
        resource_params = name_params.clone();
    }
    let mut proxy_params = name_params.clone();
    proxy_params.push(Param::path("path", params::PATH));

    // (verb, path, parameters, across namespaces)
    let mut actions: Vec<(Verb, String, &[Param], bool)> = Vec::new();
    for &verb in &s.verbs {
        actions.push(match verb {
            Verb::List | Verb::Post | Verb::DeleteCollection => {
                (verb, resource_path.clone(), &resource_params, false)
            }
            Verb::WatchList => (
                verb,
                format!("watch/{resource_path}"),
                &resource_params,
                false,
            ),
            Verb::Watch => (verb, format!("watch/{item_path}"), &name_params, false),
            _ => (verb, item_path.clone(), &name_params, false),
        });
        if verb == Verb::Connect && matches!(s.special, Some((Handler::Proxy, _))) {
            actions.push((verb, format!("{item_path}/{{path}}"), &proxy_params, false));
        }
    }
    if r.namespaced && s.sub.is_empty() {
        for &verb in &s.verbs {
            match verb {
                Verb::List => actions.push((verb, r.plural.clone(), &[], true)),
                Verb::WatchList => actions.push((verb, format!("watch/{}", r.plural), &[], true)),
                _ => {}
            }
        }
    }

    let (media, streams) = media_types(schemas.protobuf);
    let list = if s.verbs.contains(&Verb::Watch) {
        "list or watch"
    } else {
        "list"
    };
    for (verb, path, action_params, all_namespaces) in actions {
        let Some(doc) = VERB_DOCS.iter().find(|d| d.verb == verb) else {
            continue;
        };
        let namespaced = if r.namespaced && !all_namespaces {
            "Namespaced"
        } else {
            ""
        };
        let suffix = match (path.ends_with("/{path}"), all_namespaces) {
            (true, _) => "WithPath",
            (false, true) => "ForAllNamespaces",
            (false, false) => "",
        };
        let names = format!(
            "{namespaced}{}{}{}{suffix}",
            r.kind,
            title(s.sub),
            if verb == Verb::WatchList { "List" } else { "" }
        );
        let methods: &[&str] = match (verb, s.special) {
            (Verb::Connect, Some((Handler::Proxy, _))) => PROXY_METHODS,
            (Verb::Connect, _) => CONNECT_METHODS,
            (Verb::List | Verb::WatchList | Verb::Get | Verb::Watch, _) => &["GET"],
            (Verb::Post, _) => &["POST"],
            (Verb::Put, _) => &["PUT"],
            (Verb::Patch, _) => &["PATCH"],
            (Verb::Delete | Verb::DeleteCollection, _) => &["DELETE"],
        };
        for &method in methods {
            let template = if s.sub.is_empty() {
                doc.resource
            } else {
                doc.subresource
            };
            let description = template
                .replace("{list}", list)
                .replace("{kind}", &r.kind)
                .replace("{sub}", s.sub)
                .replace("{a}", article(&r.kind))
                .replace("{method}", method)
                .replace("{deprecated}", WATCH_DEPRECATED);
            let connect = if verb == Verb::Connect {
                title(method)
            } else {
                String::new()
            };
            let mut route = Route::new(
                format!("{prefix}/{path}"),
                lowercase(method),
                format!("{}{connect}{names}", doc.operation),
                description,
            );
            route.action = Some(doc.action);
            route.gvk = Some(s.kind.clone());
            route.params = action_params.to_vec();
            if verb != Verb::Connect {
                route.params.push(pretty());
            }
            let options = match s.special {
                Some((_, options)) if matches!(verb, Verb::Get | Verb::Connect) => options,
                _ => doc.options,
            };
            route.params.extend(options.iter().map(Param::query));
            route.body = match doc.reads {
                Reads::Nothing => None,
                Reads::Object => Some((s.object.clone(), true)),
                Reads::Patch => Some((PATCH.into(), true)),
                Reads::DeleteOptions => Some((DELETE_OPTIONS.into(), false)),
            };
            if doc.reads == Reads::Patch {
                route.consumes = [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]
                    .into_iter()
                    .filter(|t| schemas.strategic_merge || *t != STRATEGIC_MERGE_PATCH)
                    .collect();
            }
            route.responses = doc.responses;
            route.answer = match doc.writes {
                Writes::Object => Answer::schema(&s.object),
                Writes::List => Answer::schema(&schemas.list),
                Writes::Deleted if r.delete_returns_object => Answer::schema(&s.object),
                Writes::Status | Writes::Deleted => Answer::schema(STATUS),
                Writes::WatchEvent => Answer::schema(WATCH_EVENT),
                Writes::Text => Answer::Text,
            };
            route.produces = match (verb, s.special) {
                (Verb::Connect, _) => vec![ANY],
                (Verb::Get, Some((Handler::Log, _))) => {
                    route.answer = Answer::Text;
                    [TEXT].into_iter().chain(media.iter().copied()).collect()
                }
                _ if doc.streams => media.iter().chain(&streams).copied().collect(),
                _ => media.clone(),
            };
            out.push(route);
        }
    }
}

const CONNECT_METHODS: &[&str] = &["GET", "POST"];
const PROXY_METHODS: &[&str] = &["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"];

/// An HTTP method as a path item's key.
fn lowercase(method: &str) -> &'static str {
    match method {
        "DELETE" => "delete",
        "GET" => "get",
        "HEAD" => "head",
        "OPTIONS" => "options",
        "PATCH" => "patch",
        "POST" => "post",
        _ => "put",
    }
}

/// The routes apiextensions-apiserver's OpenAPI builder gives a CRD's version.
fn custom_resource_routes(r: &ServedResource, schemas: &KindSchemas, out: &mut Vec<Route>) {
    let kind = &r.kind;
    let mut root = format!("/apis/{}/{}/{}", r.group, r.version, r.plural);
    let namespaced = if r.namespaced { "Namespaced" } else { "" };
    let route = |root: &str,
                 sub: &str,
                 method: &'static str,
                 action: &'static str,
                 verb: &str,
                 answer: &str| {
        let path = match sub {
            "" => root.to_string(),
            "{name}" => format!("{root}/{{name}}"),
            sub => format!("{root}/{{name}}/{sub}"),
        };
        let subresource = if sub == "{name}" { "" } else { sub };
        let of = if subresource.is_empty() {
            String::new()
        } else {
            format!(" {subresource} of")
        };
        let description = match verb {
            "list" => format!("list{of} objects of kind {kind}"),
            "read" | "replace" => format!("{verb}{of} the specified {kind}"),
            "patch" => format!("partially update{of} the specified {kind}"),
            "create" | "delete" => format!("{verb}{of}{}{kind}", article(kind)),
            _ => {
                let of = if of.is_empty() { of } else { format!("{of} a") };
                format!("delete collection of{of} {kind}")
            }
        };
        let mut route = Route::new(
            path.clone(),
            method,
            format!("{verb}{namespaced}{kind}{}", title(subresource)),
            description,
        );
        route.action = Some(action);
        route.gvk = Some(r.gvk());
        route.produces = vec![JSON, YAML];
        route.answer = Answer::schema(answer);
        if path.contains("{namespace}") {
            route.params.push(namespace());
        }
        if path.contains("{name}") {
            route
                .params
                .push(Param::path("name", format!("name of the {kind}")));
        }
        route.params.push(pretty());
        route.consumes = if method == "patch" {
            vec![JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
        } else {
            vec![JSON, YAML]
        };
        let (options, body, responses): (&[Field], Option<(&str, bool)>, _) = match action {
            "get" => (params::GET_OPTIONS, None, OK),
            "list" | "deletecollection" => (params::LIST_OPTIONS, None, OK),
            "put" => (params::CREATE_OPTIONS, Some((answer, true)), OK_CREATED),
            "patch" => (params::PATCH_OPTIONS, Some((PATCH, true)), OK),
            "post" => (
                params::CREATE_OPTIONS,
                Some((answer, true)),
                OK_CREATED_ACCEPTED,
            ),
            _ => (
                params::DELETE_OPTIONS,
                Some((DELETE_OPTIONS, false)),
                OK_ACCEPTED,
            ),
        };
        route.params.extend(options.iter().map(Param::query));
        route.body = body.map(|(schema, required)| (schema.to_string(), required));
        route.responses = responses;
        route
    };
    if r.namespaced {
        let mut all = route(&root, "", "get", "list", "list", &schemas.list);
        all.operation = format!("list{kind}ForAllNamespaces");
        out.push(all);
        root = format!(
            "/apis/{}/{}/namespaces/{{namespace}}/{}",
            r.group, r.version, r.plural
        );
    }
    out.push(route(&root, "", "get", "list", "list", &schemas.list));
    out.push(route(&root, "", "post", "post", "create", &schemas.kind));
    out.push(route(
        &root,
        "",
        "delete",
        "deletecollection",
        "deletecollection",
        STATUS,
    ));
    let mut item = |sub: &str, object: &str| {
        out.push(route(&root, sub, "get", "get", "read", object));
        out.push(route(&root, sub, "put", "put", "replace", object));
        if sub == "{name}" {
            out.push(route(&root, sub, "delete", "delete", "delete", STATUS));
        }
        out.push(route(&root, sub, "patch", "patch", "patch", object));
    };
    item("{name}", &schemas.kind);
    for sub in r
        .has_status
        .then_some("status")
        .into_iter()
        .chain(r.subresources.iter().map(|s| s.name.as_str()))
    {
        match sub {
            "status" => item("status", &schemas.kind),
            "scale" => item("scale", crate::builtin::SCALE),
            _ => {}
        }
    }
}

/// kube-openapi's `buildPaths`: routes grouped by path, the parameters (by name
/// and location) of every route at a path moved to the path, both lists sorted
/// by name and location.
pub(crate) fn path_items(routes: Vec<Route>) -> Vec<PathItem> {
    let mut by_path: BTreeMap<String, Vec<Route>> = BTreeMap::new();
    for route in routes {
        by_path.entry(route.path.clone()).or_default().push(route);
    }
    by_path
        .into_iter()
        .map(|(path, mut ops)| {
            let mut common: Vec<Param> = Vec::new();
            if let Some(last) = ops.last() {
                for p in &last.params {
                    if ops
                        .iter()
                        .all(|op| op.params.iter().any(|q| q.key() == p.key()))
                    {
                        common.push(p.clone());
                    }
                }
            }
            common.sort_by_key(Param::key);
            for op in &mut ops {
                op.params
                    .retain(|p| !common.iter().any(|c| c.key() == p.key()));
                op.params.sort_by_key(Param::key);
            }
            PathItem {
                path,
                params: common,
                ops,
            }
        })
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

/// The kube extensions of an operation.
fn extensions(op: &Route, o: &mut Map<String, Value>) {
    if let Some(action) = op.action {
        o.insert("x-kubernetes-action".into(), json!(action));
    }
    if let Some(gvk) = &op.gvk {
        o.insert("x-kubernetes-group-version-kind".into(), gvk.to_json());
    }
}

/// Renders paths as an OpenAPI 3.0 `paths` object.
pub(crate) fn render_v3(items: &[PathItem]) -> Map<String, Value> {
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
            let (id, tag) = operation_id_and_tag(&op.operation, &op.path);
            let mut o = Map::new();
            o.insert("description".into(), json!(op.description));
            o.insert("operationId".into(), json!(id));
            if !op.params.is_empty() {
                o.insert(
                    "parameters".into(),
                    op.params.iter().map(param_v3).collect(),
                );
            }
            if let Some((schema, required)) = &op.body {
                let schema = json!({"schema": {"$ref": format!("{V3_PREFIX}{schema}")}});
                let content: Map<String, Value> = op
                    .consumes
                    .iter()
                    .map(|t| (t.to_string(), schema.clone()))
                    .collect();
                let mut body = json!({ "content": content });
                if *required {
                    body["required"] = json!(true);
                }
                o.insert("requestBody".into(), body);
            }
            let schema = json!({"schema": op.answer.json(V3_PREFIX)});
            let content: Map<String, Value> = op
                .produces
                .iter()
                .map(|t| (t.to_string(), schema.clone()))
                .collect();
            let mut responses: Map<String, Value> = op
                .responses
                .iter()
                .map(|(code, description)| {
                    (
                        code.to_string(),
                        json!({"content": content, "description": description}),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            o.insert("responses".into(), Value::Object(responses));
            o.insert("tags".into(), json!([tag]));
            extensions(op, &mut o);
            path.insert(op.method.into(), Value::Object(o));
        }
        paths.insert(item.path.clone(), Value::Object(path));
    }
    paths
}

/// Renders paths as a Swagger 2.0 `paths` object (parameters inline; see
/// [`share_parameters`]).
pub(crate) fn render_v2(items: &[PathItem], out: &mut Map<String, Value>) {
    for item in items {
        let mut path = Map::new();
        if !item.params.is_empty() {
            path.insert(
                "parameters".into(),
                item.params.iter().map(param_v2).collect(),
            );
        }
        for op in &item.ops {
            let (id, tag) = operation_id_and_tag(&op.operation, &op.path);
            let mut o = Map::new();
            o.insert("consumes".into(), json!(op.consumes));
            o.insert("description".into(), json!(op.description));
            o.insert("operationId".into(), json!(id));
            // The body is a parameter named `body`, sorted with the others.
            let mut params: Vec<(&str, Value)> =
                op.params.iter().map(|p| (p.name, param_v2(p))).collect();
            if let Some((schema, required)) = &op.body {
                let mut p = json!({
                    "in": "body",
                    "name": "body",
                    "schema": {"$ref": format!("{V2_PREFIX}{schema}")},
                });
                if *required {
                    p["required"] = json!(true);
                }
                let at = params.partition_point(|(name, _)| *name < "body");
                params.insert(at, ("body", p));
            }
            if !params.is_empty() {
                o.insert(
                    "parameters".into(),
                    params.into_iter().map(|(_, p)| p).collect(),
                );
            }
            o.insert("produces".into(), json!(op.produces));
            let schema = op.answer.json(V2_PREFIX);
            let mut responses: Map<String, Value> = op
                .responses
                .iter()
                .map(|(code, description)| {
                    (
                        code.to_string(),
                        json!({"description": description, "schema": schema}),
                    )
                })
                .collect();
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            o.insert("responses".into(), Value::Object(responses));
            o.insert("schemes".into(), json!(["https"]));
            o.insert("tags".into(), json!([tag]));
            extensions(op, &mut o);
            path.insert(op.method.into(), Value::Object(o));
        }
        out.insert(item.path.clone(), Value::Object(path));
    }
}

/// kube-openapi's `deduplicateParameters` on a Swagger 2.0 `paths` object: every
/// parameter becomes a `$ref` to `#/parameters/<name>-<hash>`, except those
/// naming the kind (`name`), those kubectl looks for in an operation
/// (`dryRun`, `fieldValidation`) and bodies of a kind's own schema. Returns the
/// shared parameters.
pub(crate) fn share_parameters(paths: &mut Map<String, Value>) -> Map<String, Value> {
    fn shared(p: &Map<String, Value>) -> bool {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        let location = p.get("in").and_then(Value::as_str).unwrap_or("");
        match (location, name) {
            ("query" | "path", "name") | ("query", "fieldValidation" | "dryRun") => false,
            ("body", "body") => p
                .get("schema")
                .and_then(|s| s.get("$ref"))
                .and_then(Value::as_str)
                .is_some_and(|r| r.starts_with(&format!("{V2_PREFIX}io.k8s.apimachinery"))),
            _ => !p.contains_key("$ref"),
        }
    }
    fn lists(item: &mut Value) -> impl Iterator<Item = &mut Vec<Value>> {
        item.as_object_mut().into_iter().flat_map(|item| {
            item.iter_mut().filter_map(|(key, v)| match key.as_str() {
                "parameters" => v.as_array_mut(),
                _ => v.get_mut("parameters").and_then(Value::as_array_mut),
            })
        })
    }
    let mut by_json: BTreeMap<String, Value> = BTreeMap::new();
    for item in paths.values_mut() {
        for list in lists(item) {
            for p in list.iter() {
                if let Some(m) = p.as_object().filter(|m| shared(m)) {
                    by_json
                        .entry(go_parameter_json(m))
                        .or_insert_with(|| p.clone());
                }
            }
        }
    }
    let mut parameters = Map::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for (text, p) in by_json {
        let base = p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("param")
            .to_string();
        let mut name = format!("{base}-{}", fnv_base64(&text));
        let mut i = 0;
        while parameters.contains_key(&name) {
            i += 1;
            name = format!("{base}-{i}");
        }
        parameters.insert(name.clone(), p);
        names.insert(text, name);
    }
    for item in paths.values_mut() {
        for list in lists(item) {
            for p in list.iter_mut() {
                if let Some(name) = p
                    .as_object()
                    .filter(|m| shared(m))
                    .and_then(|m| names.get(&go_parameter_json(m)))
                {
                    *p = json!({"$ref": format!("#/parameters/{name}")});
                }
            }
        }
    }
    parameters
}

/// A Swagger 2.0 parameter as Go's `encoding/json` writes kube-openapi's
/// `spec.Parameter`: its fields in struct order, `<`, `>` and `&` escaped.
fn go_parameter_json(p: &Map<String, Value>) -> String {
    let mut out = String::from("{");
    for key in [
        "uniqueItems",
        "type",
        "description",
        "name",
        "in",
        "required",
        "schema",
    ] {
        if let Some(v) = p.get(key) {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&format!("{}:{}", json!(key), v));
        }
    }
    out.push('}');
    out.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// kube-openapi's `base64Hash`: FNV-1 (64-bit), the first 6 bytes in URL-safe
/// base64 (8 characters).
fn fnv_base64(s: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= u64::from(b);
    }
    let bits = h >> 16;
    (0..8)
        .rev()
        .map(|i| char::from(ALPHABET[((bits >> (6 * i)) & 63) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_and_tags() {
        let cases = [
            (
                "listNamespacedLease",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                "listCoordinationV1NamespacedLease",
                "coordination_v1",
            ),
            (
                "deletecollectionNamespacedLease",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                "deleteCoordinationV1CollectionNamespacedLease",
                "coordination_v1",
            ),
            (
                "connectGetNamespacedPodAttach",
                "/api/v1/namespaces/{namespace}/pods/{name}/attach",
                "connectCoreV1GetNamespacedPodAttach",
                "core_v1",
            ),
            (
                "readClusterRole",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}",
                "readRbacAuthorizationV1ClusterRole",
                "rbacAuthorization_v1",
            ),
            (
                "listNamespacedWidget",
                "/apis/stable.example.com/v1beta1/namespaces/{namespace}/widgets",
                "listStableExampleComV1beta1NamespacedWidget",
                "stableExampleCom_v1beta1",
            ),
            ("getAPIVersions", "/api/", "getCoreAPIVersions", "core"),
            ("getAPIVersions", "/apis/", "getAPIVersions", "apis"),
            ("getAPIGroup", "/apis/apps/", "getAppsAPIGroup", "apps"),
            ("getCodeVersion", "/version/", "getCodeVersion", "version"),
        ];
        for (operation, path, id, tag) in cases {
            assert_eq!(
                operation_id_and_tag(operation, path),
                (id.to_string(), tag.to_string())
            );
        }
        let tag = |group, version| {
            operation_id_and_tag("get", &format!("{}/", url_prefix(group, version))).1
        };
        assert_eq!(
            tag("flowcontrol.apiserver.k8s.io", "v1"),
            "flowcontrolApiserver_v1"
        );
        assert_eq!(tag("", "v1"), "core_v1");
    }

    #[test]
    fn articles() {
        assert_eq!(article("Pod"), " a ");
        assert_eq!(article("IngressClass"), " an ");
        assert_eq!(article("Endpoints"), " ");
        assert_eq!(article("StorageClass"), " a ");
    }

    #[test]
    fn shared_parameter_names_hash_as_kube_openapi() {
        // kube-openapi's own test vector.
        let p = json!({"description": "x", "in": "query", "name": "x", "type": "boolean", "uniqueItems": true});
        let text = go_parameter_json(p.as_object().unwrap());
        assert_eq!(
            text,
            r#"{"uniqueItems":true,"type":"boolean","description":"x","name":"x","in":"query"}"#
        );
        assert_eq!(fnv_base64(&text), "yaDSHpi7");
    }
}
