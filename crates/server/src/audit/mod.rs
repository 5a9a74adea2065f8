//! Audit (`--audit-policy-file`, `--audit-log-*`): the filter chain's third
//! stage. Each request the policy selects is recorded as `audit.k8s.io/v1`
//! Events — RequestReceived, ResponseStarted (long-running requests only),
//! ResponseComplete — with the authenticated user, the impersonated one,
//! source IPs, the object reference, the response status, the authorization
//! decision as annotations, and at `Request`/`RequestResponse` level the
//! request and response objects. A request that fails authentication is one
//! ResponseStarted event with an empty user, as upstream.

pub mod backend;
pub mod event;
pub mod policy;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use apimachinery::meta;
use bytes::Bytes;
use serde_json::Value;

pub use backend::{LogBackend, LogOptions};
use event::{Event, ObjectRef, ResponseStatus, micro_time};
pub use policy::{Level, Policy, Stage};

use crate::request_info::RequestInfo;
use crate::user::UserInfo;

/// The policy and where events go; one per server.
pub struct Auditor {
    policy: Policy,
    backend: LogBackend,
    /// Requests per policy level (`apiserver_audit_level_total`).
    levels: [AtomicU64; 4],
}

/// What a request looked like when it arrived.
pub struct Arrival<'a> {
    pub info: &'a RequestInfo,
    pub request_uri: &'a str,
    pub verb: &'a str,
    pub path: &'a str,
    pub user_agent: &'a str,
    pub source_ips: Vec<String>,
    pub audit_id: &'a str,
}

impl Auditor {
    pub fn new(policy: Policy, backend: LogBackend) -> Arc<Auditor> {
        Arc::new(Auditor {
            policy,
            backend,
            levels: Default::default(),
        })
    }

    fn decide(&self, arrival: &Arrival<'_>, user: Option<&UserInfo>) -> policy::Decision {
        let info = arrival.info;
        let decision = self.policy.decide(&policy::Request {
            user: user.map(|u| (u.name.as_str(), u.groups.as_slice())),
            verb: arrival.verb,
            is_resource: info.is_resource,
            group: &info.group,
            resource: &info.resource,
            subresource: info.subresource.as_str(),
            namespace: &info.namespace,
            name: &info.name,
            path: arrival.path,
        });
        self.levels[decision.level as usize].fetch_add(1, Ordering::Relaxed);
        decision
    }

    /// Start recording a request made by `user` (acting as `impersonated`), if
    /// the policy selects it; emits RequestReceived.
    pub fn begin(
        self: &Arc<Self>,
        arrival: Arrival<'_>,
        user: &UserInfo,
        impersonated: Option<&UserInfo>,
    ) -> Option<Audit> {
        let decision = self.decide(&arrival, Some(user));
        if decision.level == Level::None {
            return None;
        }
        let received = jiff::Timestamp::now();
        let audit = Audit {
            auditor: self.clone(),
            event: Arc::new(Mutex::new(base_event(
                &arrival,
                &decision,
                user,
                impersonated,
                received,
            ))),
            decision,
            body: BodyCapture::default(),
            annotations: Default::default(),
            completed: std::sync::atomic::AtomicBool::new(false),
        };
        audit.emit(Stage::RequestReceived);
        Some(audit)
    }

    /// A request that failed authentication: one ResponseStarted event.
    pub fn unauthenticated(&self, arrival: Arrival<'_>, status: &Value) {
        let decision = self.decide(&arrival, None);
        if decision.level == Level::None || decision.omit_stages.contains(&Stage::ResponseStarted) {
            return;
        }
        let mut event = base_event(
            &arrival,
            &decision,
            &UserInfo::default(),
            None,
            jiff::Timestamp::now(),
        );
        event.user = event::UserInfo::default();
        event.response_status = Some(response_status(401, Some(status)));
        event.stage = Stage::ResponseStarted.as_str();
        event.stage_timestamp = micro_time(jiff::Timestamp::now());
        self.backend.send(event.line());
    }

    /// `/metrics` lines.
    pub fn render_metrics(&self, out: &mut String) {
        let c = &self.backend.counters;
        out.push_str("# HELP apiserver_audit_event_total Counter of audit events generated and sent to the audit backend.\n# TYPE apiserver_audit_event_total counter\n");
        out.push_str(&format!(
            "apiserver_audit_event_total {}\n",
            c.events.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP apiserver_audit_error_total Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.\n# TYPE apiserver_audit_error_total counter\n");
        out.push_str(&format!(
            "apiserver_audit_error_total{{plugin=\"log\"}} {}\n",
            c.errors.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP apiserver_audit_level_total Counter of policy levels for audit events (1 per request).\n# TYPE apiserver_audit_level_total counter\n");
        for level in [
            Level::None,
            Level::Metadata,
            Level::Request,
            Level::RequestResponse,
        ] {
            out.push_str(&format!(
                "apiserver_audit_level_total{{level=\"{}\"}} {}\n",
                level.as_str(),
                self.levels[level as usize].load(Ordering::Relaxed)
            ));
        }
    }
}

fn base_event(
    arrival: &Arrival<'_>,
    decision: &policy::Decision,
    user: &UserInfo,
    impersonated: Option<&UserInfo>,
    received: jiff::Timestamp,
) -> Event {
    let info = arrival.info;
    let object_ref = info.is_resource.then(|| ObjectRef {
        resource: info.resource.to_string(),
        namespace: info.namespace.to_string(),
        name: info.name.to_string(),
        api_group: info.group.to_string(),
        api_version: info.version.to_string(),
        subresource: info.subresource.as_str().to_string(),
        ..Default::default()
    });
    let received = micro_time(received);
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: decision.level.as_str(),
        audit_id: arrival.audit_id.to_string(),
        stage: Stage::RequestReceived.as_str(),
        request_uri: arrival.request_uri.to_string(),
        verb: arrival.verb.to_string(),
        user: user.into(),
        impersonated_user: impersonated.map(Into::into),
        source_ips: arrival.source_ips.clone(),
        user_agent: truncate_user_agent(arrival.user_agent),
        object_ref,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: received.clone(),
        stage_timestamp: received,
        annotations: BTreeMap::new(),
    }
}

fn truncate_user_agent(agent: &str) -> String {
    const MAX: usize = 1024;
    if agent.len() <= MAX {
        return agent.to_string();
    }
    let mut end = MAX;
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...TRUNCATED", &agent[..end])
}

/// `responseStatus` for a response with `code` and, if it is a Status, its body.
fn response_status(code: u16, status: Option<&Value>) -> ResponseStatus {
    let text = |key: &str| {
        status
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ResponseStatus {
        metadata: BTreeMap::new(),
        status: text("status"),
        message: text("message"),
        reason: text("reason"),
        details: status.and_then(|s| s.get("details")).cloned(),
        code,
    }
}

/// Where a handler leaves the request object it decoded, for `requestObject`
/// (and the object reference's name and uid).
#[derive(Clone, Default)]
pub struct BodyCapture(Arc<Mutex<Option<Value>>>);

impl BodyCapture {
    pub fn keep(&self, object: &Value) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(object.clone());
        }
    }

    /// A body the handler did not decode into an object (a patch, options).
    pub fn keep_bytes(&self, body: &Bytes) {
        if let Ok(object) = serde_json::from_slice::<Value>(body) {
            self.keep(&object);
        }
    }

    fn take(&self) -> Option<Value> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// One request being recorded.
pub struct Audit {
    auditor: Arc<Auditor>,
    event: Arc<Mutex<Event>>,
    decision: policy::Decision,
    /// Filled by the handler that reads the body.
    pub body: BodyCapture,
    /// Filled by admission (policies' audit annotations).
    pub annotations: registry::AuditAnnotations,
    /// ResponseComplete was recorded; dropped without it while panicking is a
    /// Panic event.
    completed: std::sync::atomic::AtomicBool,
}

impl Drop for Audit {
    /// A handler that panics unwinds through here: upstream's Panic stage.
    fn drop(&mut self) {
        if self.completed.load(Ordering::Relaxed) || !std::thread::panicking() {
            return;
        }
        let status = serde_json::json!({"status": "Failure", "reason": "InternalError",
            "message": "APIServer panic'd: the handler panicked"});
        self.with_event(|e| e.response_status = Some(response_status(500, Some(&status))));
        self.emit(Stage::Panic);
    }
}

impl Audit {
    pub fn level(&self) -> Level {
        self.decision.level
    }

    fn with_event<T>(&self, f: impl FnOnce(&mut Event) -> T) -> Option<T> {
        self.event.lock().ok().map(|mut e| f(&mut e))
    }

    /// The request acts as `user` (impersonation).
    pub fn impersonated(&self, user: &UserInfo) {
        self.with_event(|e| e.impersonated_user = Some(user.into()));
    }

    /// Record the authorization decision (`authorization.k8s.io/decision` and
    /// `/reason`).
    pub fn authorized(&self, allowed: bool, reason: &str) {
        self.with_event(|e| {
            e.annotations.insert(
                "authorization.k8s.io/decision".into(),
                if allowed { "allow" } else { "forbid" }.into(),
            );
            e.annotations
                .insert("authorization.k8s.io/reason".into(), reason.to_string());
        });
    }

    fn emit(&self, stage: Stage) {
        if self.decision.omit_stages.contains(&stage) {
            return;
        }
        let line = self.with_event(|e| {
            e.stage = stage.as_str();
            e.stage_timestamp = if stage == Stage::RequestReceived {
                e.request_received_timestamp.clone()
            } else {
                micro_time(jiff::Timestamp::now())
            };
            e.line()
        });
        if let Some(line) = line {
            self.auditor.backend.send(line);
        }
    }

    /// The response is known: its code, its Status if it is one, and (by level)
    /// the request and response objects.
    pub fn responded(&self, code: u16, body: Option<&[u8]>) {
        // Answers in protobuf are recorded as JSON, as upstream's audit does.
        let parsed: Option<Value> = body.and_then(|b| match b.starts_with(&protobuf::MAGIC) {
            true => protobuf::decode(b).ok(),
            false => serde_json::from_slice(b).ok(),
        });
        let is_status = parsed
            .as_ref()
            .is_some_and(|v| v.get("kind") == Some(&Value::from("Status")));
        let request_body = self.body.take();
        let omit_managed = self.decision.omit_managed_fields;
        let level = self.decision.level;
        let (annotations, request_annotations) = self.annotations.take();
        self.with_event(|e| {
            for (k, v) in annotations {
                e.annotations.entry(k).or_insert(v);
            }
            if level >= Level::Request {
                for (k, v) in request_annotations {
                    e.annotations.entry(k).or_insert(v);
                }
            }
            e.response_status = Some(response_status(code, parsed.as_ref().filter(|_| is_status)));
            let request_object = request_body;
            if let (Some(object), Some(object_ref)) = (&request_object, e.object_ref.as_mut()) {
                let field = |k: &str| meta::str_field(object, k).unwrap_or("");
                if object_ref.name.is_empty() {
                    object_ref.name = field("name").to_string();
                }
                if object_ref.uid.is_empty() {
                    object_ref.uid = field("uid").to_string();
                }
                if object_ref.resource_version.is_empty() {
                    object_ref.resource_version = field("resourceVersion").to_string();
                }
            }
            if level >= Level::Request {
                e.request_object = request_object.map(|o| strip(o, omit_managed));
            }
            if level >= Level::RequestResponse {
                e.response_object = parsed.map(|o| strip(o, omit_managed));
            }
        });
    }

    /// The answer went out (ResponseStarted, for long-running requests).
    pub fn started(&self) {
        self.emit(Stage::ResponseStarted);
    }

    /// The request is over (ResponseComplete).
    pub fn complete(&self) {
        self.completed.store(true, Ordering::Relaxed);
        self.emit(Stage::ResponseComplete);
    }
}

/// `omitManagedFields`: drop `metadata.managedFields` (of list items too).
fn strip(mut object: Value, omit_managed_fields: bool) -> Value {
    if omit_managed_fields {
        meta::remove(&mut object, "managedFields");
        if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
            for item in items {
                meta::remove(item, "managedFields");
            }
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handler_that_panics_leaves_a_panic_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let policy =
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
                .unwrap();
        let backend = LogBackend::open(LogOptions {
            path: path.clone(),
            max_age_days: 0,
            max_backups: 0,
            max_size_mb: 0,
        })
        .unwrap();
        let auditor = Auditor::new(policy, backend);
        let info =
            crate::request_info::parse("GET", "/api/v1/namespaces/default/configmaps/x", false);
        let user = UserInfo {
            name: "alice".into(),
            ..Default::default()
        };
        let arrival = || Arrival {
            info: &info,
            request_uri: "/api/v1/namespaces/default/configmaps/x",
            verb: "get",
            path: "/api/v1/namespaces/default/configmaps/x",
            user_agent: "test",
            source_ips: vec!["127.0.0.1".into()],
            audit_id: "panicky",
        };
        let audit = auditor.begin(arrival(), &user, None).unwrap();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = audit;
            panic!("boom");
        }));
        assert!(unwound.is_err());
        // A request that completes normally has no Panic event.
        let calm = auditor.begin(arrival(), &user, None).unwrap();
        calm.responded(200, None);
        calm.complete();
        drop(calm);
        let mut stages = Vec::new();
        for _ in 0..100 {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            stages = text
                .lines()
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap()["stage"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect();
            if stages.len() >= 4 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            stages,
            [
                "RequestReceived",
                "Panic",
                "RequestReceived",
                "ResponseComplete"
            ]
        );
        let panic_line: Value = serde_json::from_str(
            std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .nth(1)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(panic_line["responseStatus"]["code"], 500);
        assert_eq!(panic_line["responseStatus"]["reason"], "InternalError");
    }
}
