//! managedFields as kube-apiserver 1.37.2 writes them, measured side by side
//! (`data/managed_fields_upstream.json`): the writer is credited with what it
//! sent, defaulted where a body is decoded (not with what admission plugins,
//! the strategy or allocation add: a service account's token volume, a
//! Service's cluster IP and node ports, a Job's generated selector, the
//! `pvc-protection` finalizer, status set on create); zero values Go holds
//! anyway (`spec.pool.generation: 0`) are nobody's; atomic structs
//! (`LabelSelector`) are owned whole; the strategy's reset fields (`status`
//! through the main resource, `spec` and for some kinds parts of `metadata`
//! through `/status`) are never credited, by updates or applies. Creates,
//! updates through the main resource and `/status`, merge and strategic merge
//! patches, server-side apply then an update by another manager, `scale`,
//! `resize`, `ephemeralcontainers` and `binding`, over Pods, Services,
//! workloads, volumes, ConfigMaps, Secrets, CRDs and a custom resource with a
//! status subresource, a ResourceSlice and a CertificateSigningRequest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::Server;

const UPSTREAM: &str = include_str!("data/managed_fields_upstream.json");

/// `metadata.managedFields` without times, sorted: upstream orders entries
/// by time (seconds) before manager, so writes within one second may come in
/// either order.
fn entries(obj: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            if let Some(e) = e.as_object_mut() {
                e.remove("time");
            }
            e
        })
        .collect();
    out.sort_by_key(|e| e.to_string());
    out
}

/// The step's path with its `fieldManager` (unless the path names one).
fn uri(step: &Value) -> String {
    let path = step["path"].as_str().unwrap();
    match step.get("manager").and_then(Value::as_str) {
        Some(manager) => {
            let sep = if path.contains('?') { '&' } else { '?' };
            format!("{path}{sep}fieldManager={manager}")
        }
        None => path.to_string(),
    }
}

/// `live` with the step's edit: `["set", pointer, value]` or
/// `["remove", pointer]`.
fn edited(mut live: Value, edit: &Value) -> Value {
    for op in edit.as_array().unwrap() {
        let pointer = op[1].as_str().unwrap();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        if live.pointer(parent).is_none() {
            let mut at = &mut live;
            for part in parent.split('/').skip(1) {
                at = at
                    .as_object_mut()
                    .unwrap()
                    .entry(part)
                    .or_insert_with(|| json!({}));
            }
        }
        let map = live.pointer_mut(parent).unwrap().as_object_mut().unwrap();
        match op[0].as_str().unwrap() {
            "set" => {
                map.insert(key.to_string(), op[2].clone());
            }
            _ => {
                map.remove(key);
            }
        }
    }
    live
}

async fn send(client: &kube::Client, step: &Value) -> (u16, Value) {
    let method = step["method"].as_str().unwrap();
    let content_type = step
        .get("contentType")
        .and_then(Value::as_str)
        .unwrap_or("application/json");
    let body = match (step.get("editLive"), step.get("body")) {
        (Some(live), _) => {
            let (code, bytes) =
                common::send_body(client, "GET", live.as_str().unwrap(), "", &Value::Null).await;
            assert_eq!(code, 200, "GET {live}: {}", String::from_utf8_lossy(&bytes));
            Some(edited(common::json_of(&bytes), &step["edit"]))
        }
        (None, Some(body)) => Some(body.clone()),
        (None, None) => None,
    };
    let (code, _, bytes) = common::send_raw(
        client,
        method,
        &uri(step),
        content_type,
        body.map(|b| serde_json::to_vec(&b).unwrap())
            .unwrap_or_default(),
    )
    .await;
    let answer = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, answer)
}

/// Until the custom resource's collection serves (its CRD established).
async fn wait_for(client: &kube::Client, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = common::send_body(client, "GET", path, "", &Value::Null).await;
        if code == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "{path} never served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn writes_are_credited_as_kube_apiserver_credits_them() {
    let server = Server::builder().start().unwrap();
    let client = server.client().await.unwrap();
    let upstream: Value = serde_json::from_str(UPSTREAM).unwrap();
    let mut differences = Vec::new();
    for step in upstream["steps"].as_array().unwrap() {
        if let Some(path) = step.get("waitFor").and_then(Value::as_str) {
            wait_for(&client, path).await;
        }
        let (code, answer) = send(&client, step).await;
        let Some(expect) = step.get("expect") else {
            continue;
        };
        let id = step["id"].as_str().unwrap();
        let want_code = expect["code"].as_u64().unwrap() as u16;
        if code != want_code {
            differences.push(format!(
                "{id}: status {code}, upstream {want_code}: {answer}"
            ));
            continue;
        }
        let want = entries(&json!({"metadata": {"managedFields": expect["managedFields"]}}));
        let got = entries(&answer);
        if got != want {
            differences.push(format!(
                "{id}:\n  kubext:   {}\n  upstream: {}",
                Value::Array(got),
                Value::Array(want)
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
