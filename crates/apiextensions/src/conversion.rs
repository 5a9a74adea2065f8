//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`): the
//! `ConversionReview` sent (v1 or v1beta1, as `conversionReviewVersions`
//! asks), the answer checked as upstream checks it, and each converted
//! object's metadata restored but for its labels and annotations — with
//! upstream's messages (`conversion webhook for <gvk> failed: …`, 500).
//! Also `spec.conversion`'s validation.

use std::time::Duration;

use apimachinery::{ErrorList, FieldError, FieldPath, StatusError, meta};
use serde_json::{Value, json};

use registry::Converter;
use webhook::metrics::{Family, labels};
use webhook::{CallError, Caller, ClientConfig, ReviewVersion};

/// Upstream's client timeout for conversion calls (they have no `timeoutSeconds`).
const TIMEOUT: Duration = Duration::from_secs(30);

static CRD_DURATION: Family = Family {
    name: "apiserver_crd_conversion_webhook_duration_seconds",
    help: "CRD webhook conversion duration in seconds",
    buckets: Some(&[
        0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
        8.192, 16.384,
    ]),
};
static REQUESTS: Family = Family {
    name: "apiserver_conversion_webhook_request_total",
    help: "Counter for conversion webhook requests with success/failure and failure error type",
    buckets: None,
};
static DURATION: Family = Family {
    name: "apiserver_conversion_webhook_duration_seconds",
    help: "Conversion webhook request latency",
    buckets: Some(&[
        0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0,
    ]),
};

/// Why a review failed, as upstream's `failure_type` label says.
const CALL_FAILURE: &str = "conversion_webhook_call_failure";
const MALFORMED: &str = "conversion_webhook_malformed_response_failure";
const PARTIAL: &str = "conversion_webhook_partial_response_failure";
const INVALID_OBJECT: &str = "conversion_webhook_invalid_converted_object_failure";
const NO_OBJECTS: &str = "conversion_webhook_no_objects_returned_failure";

/// A CRD's conversion webhook.
pub struct WebhookConverter {
    crd_name: String,
    storage_api_version: String,
    /// `None`: no ConversionReview version kubext speaks.
    review_version: Option<ReviewVersion>,
    client: ClientConfig,
    caller: Caller,
}

impl WebhookConverter {
    /// The converter of `crd` when its strategy is `Webhook`.
    pub fn of(crd: &Value, storage_api_version: &str, caller: &Caller) -> Option<WebhookConverter> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        let review_version = ReviewVersion::first_known(webhook.get("conversionReviewVersions"));
        Some(WebhookConverter {
            crd_name: meta::name(crd).to_string(),
            storage_api_version: storage_api_version.to_string(),
            review_version,
            client: ClientConfig::of(webhook.get("clientConfig").unwrap_or(&Value::Null)),
            caller: caller.clone(),
        })
    }
}

/// Go's `%v` of an object's GroupVersionKind: `stable.example.com/v1, Kind=Foo`.
fn gvk_text(obj: &Value) -> String {
    let api_version = meta::api_version(obj);
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version.contains('/') {
        format!("{api_version}, Kind={kind}")
    } else {
        format!("/{api_version}, Kind={kind}")
    }
}

/// An object with nothing but `apiVersion` and `kind` (upstream converts it
/// without a call).
fn is_empty_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(|o| o.len() == 2 && o.contains_key("apiVersion") && o.contains_key("kind"))
}

/// A conversion failure: 500 with the converter's message as is.
fn failure(message: String) -> StatusError {
    StatusError::new(500, "", message)
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[async_trait::async_trait]
impl Converter for WebhookConverter {
    fn storage_api_version(&self) -> &str {
        &self.storage_api_version
    }

    async fn convert(
        &self,
        objects: Vec<&Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, StatusError> {
        let mut converted: Vec<Value> = objects.iter().map(|o| (*o).clone()).collect();
        let send: Vec<usize> = (0..objects.len())
            .filter(|&i| meta::api_version(objects[i]) != api_version)
            .collect();
        let (empty, send): (Vec<usize>, Vec<usize>) =
            send.into_iter().partition(|&i| is_empty_object(objects[i]));
        for i in empty {
            converted[i]["apiVersion"] = json!(api_version);
        }
        let Some(&first) = send.first() else {
            return Ok(converted);
        };
        let gvk = gvk_text(objects[first]);
        let inputs: Vec<&Value> = send.iter().map(|&i| objects[i]).collect();
        let started = std::time::Instant::now();
        let result = self.call(&inputs, api_version, &gvk).await;
        self.record(objects[first], api_version, started.elapsed(), &result);
        let outputs = result.map_err(|(message, _)| failure(message))?;
        for (&i, out) in send.iter().zip(outputs) {
            converted[i] = out;
        }
        Ok(converted)
    }
}

impl WebhookConverter {
    /// Count a review in upstream's metrics.
    fn record(
        &self,
        input: &Value,
        api_version: &str,
        elapsed: Duration,
        result: &Result<Vec<Value>, (String, &'static str)>,
    ) {
        let metrics = &self.caller.metrics;
        let version = |v: &str| v.rsplit('/').next().unwrap_or("").to_string();
        let (from, to) = (version(meta::api_version(input)), version(api_version));
        let (outcome, failure_type) = match result {
            Ok(_) => ("success", ""),
            Err((_, t)) => ("failure", *t),
        };
        metrics.observe(
            &CRD_DURATION,
            labels(&[
                ("crd_name", &self.crd_name),
                ("from_version", &from),
                ("to_version", &to),
                ("succeeded", if result.is_ok() { "true" } else { "false" }),
            ]),
            elapsed,
        );
        let labels = labels(&[("result", outcome), ("failure_type", failure_type)]);
        metrics.inc(&REQUESTS, labels.clone());
        metrics.observe(&DURATION, labels, elapsed);
    }

    /// One ConversionReview for `inputs`: the converted objects, checked; or
    /// the failure and its kind.
    async fn call(
        &self,
        inputs: &[&Value],
        api_version: &str,
        gvk: &str,
    ) -> Result<Vec<Value>, (String, &'static str)> {
        let failed =
            |e: &dyn std::fmt::Display| format!("conversion webhook for {gvk} failed: {e}");
        let review_version = self.review_version.ok_or_else(|| {
            (
                failed(&"no supported conversion review versions"),
                CALL_FAILURE,
            )
        })?;
        let uid = apimachinery::object_meta::new_uid();
        let review = json!({
            "apiVersion": review_version.api_version("apiextensions.k8s.io"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": inputs},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let body = serde_json::to_vec(&review).unwrap_or_default();
        let answer = self
            .caller
            .post(&self.client, "", body, TIMEOUT)
            .await
            .map_err(|e| match e {
                CallError::Client(e) => (failed(&e), CALL_FAILURE),
                CallError::Request(e) => (failed(&e), CALL_FAILURE),
            })?;
        let answer: Value = serde_json::from_slice(&answer).map_err(|e| (failed(&e), MALFORMED))?;
        let response =
            check_review(&answer, review_version, &uid).map_err(|(e, t)| (failed(&e), t))?;
        let outputs = response
            .get("convertedObjects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if outputs.len() != inputs.len() {
            return Err((
                format!(
                    "conversion webhook for {gvk} returned {} objects, expected {}",
                    outputs.len(),
                    inputs.len()
                ),
                NO_OBJECTS,
            ));
        }
        let single = inputs.len() == 1;
        inputs
            .iter()
            .zip(outputs)
            .enumerate()
            .map(|(i, (input, mut output))| {
                let at = |what: &str, e: String| {
                    if single {
                        format!("conversion webhook for {gvk} returned {what}: {e}")
                    } else {
                        format!("conversion webhook for {gvk} returned {what} at index {i}: {e}")
                    }
                };
                check_converted(input, &output, api_version, i, single, gvk)
                    .map_err(|e| (e, INVALID_OBJECT))?;
                let object_what = if single {
                    "invalid object"
                } else {
                    "invalid converted object"
                };
                validate_identity(input, &output)
                    .map_err(|e| (at(object_what, e), INVALID_OBJECT))?;
                let metadata_what = if single {
                    "invalid metadata"
                } else {
                    "invalid metadata in object"
                };
                restore_metadata(input, &mut output)
                    .map_err(|e| (at(metadata_what, e), INVALID_OBJECT))?;
                Ok(output)
            })
            .collect()
    }
}

/// The review's `response`, once its kind, uid and result are as expected.
fn check_review<'a>(
    answer: &'a Value,
    version: ReviewVersion,
    uid: &str,
) -> Result<&'a Value, (String, &'static str)> {
    if version == ReviewVersion::V1
        && (text(answer, "/apiVersion") != "apiextensions.k8s.io/v1"
            || text(answer, "/kind") != "ConversionReview")
    {
        return Err((
            format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_text(answer)
            ),
            MALFORMED,
        ));
    }
    let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
        return Err(("no response provided".into(), MALFORMED));
    };
    if version == ReviewVersion::V1 && text(response, "/uid") != uid {
        return Err((
            format!(
                "expected response.uid={uid:?}, got {:?}",
                text(response, "/uid")
            ),
            MALFORMED,
        ));
    }
    let status = text(response, "/result/status");
    if status != "Success" {
        let message = text(response, "/result/message");
        let message = if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_string()
        };
        return Err((message, PARTIAL));
    }
    Ok(response)
}

/// The converted object is in the version asked for, of the same kind.
fn check_converted(
    input: &Value,
    output: &Value,
    api_version: &str,
    index: usize,
    single: bool,
    gvk: &str,
) -> Result<(), String> {
    let prefix = if single {
        format!("conversion webhook for {gvk} returned invalid object at index 0")
    } else {
        format!("conversion webhook for {gvk} returned invalid converted object at index {index}")
    };
    let received = meta::api_version(output);
    if received != api_version {
        return Err(format!(
            "{prefix}: invalid groupVersion (expected {api_version}, received {received})"
        ));
    }
    let (expected, received) = (text(input, "/kind"), text(output, "/kind"));
    if expected != received {
        return Err(format!(
            "{prefix}: invalid kind (expected {expected}, received {received})"
        ));
    }
    Ok(())
}

/// Kind, name, namespace and UID are the input's.
fn validate_identity(input: &Value, output: &Value) -> Result<(), String> {
    for (what, e, a) in [
        ("kind", meta::kind(input), meta::kind(output)),
        ("name", meta::name(input), meta::name(output)),
        ("namespace", meta::namespace(input), meta::namespace(output)),
        ("UID", meta::uid(input), meta::uid(output)),
    ] {
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The input's metadata with the output's labels and annotations (checked),
/// as upstream's `restoreObjectMeta`: anything else a webhook changes in
/// metadata is silently undone.
fn restore_metadata(input: &Value, output: &mut Value) -> Result<(), String> {
    let converted = match meta::member(output) {
        None | Some(Value::Null) => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored = meta::metadata(input).cloned().unwrap_or_default();
    let mut errs = ErrorList::new();
    for (field, path) in [
        ("labels", "metadata.labels"),
        ("annotations", "metadata.annotation"),
    ] {
        match converted.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                if restored.get(field) != Some(&Value::Object(m.clone())) {
                    errs.extend(if field == "labels" {
                        apimachinery::validation::validate_labels(m, &FieldPath::new(path))
                    } else {
                        apimachinery::validation::validate_annotations(m, &FieldPath::new(path))
                    });
                }
                restored.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        }
    }
    if !errs.is_empty() {
        return Err(aggregate(&errs));
    }
    *meta::metadata_mut(output) = restored;
    Ok(())
}

/// Go's aggregate error text: one error as is, several as `[a, b]`.
fn aggregate(errs: &ErrorList) -> String {
    let all: Vec<String> = errs.iter().map(ToString::to_string).collect();
    if all.len() == 1 {
        all[0].clone()
    } else {
        format!("[{}]", all.join(", "))
    }
}

/// `spec.conversion` as upstream validates it (on its internal type: the
/// paths name `webhookClientConfig` and `conversionReviewVersions` directly
/// under `spec.conversion`).
pub fn validate(crd: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return errs;
    };
    let path = FieldPath::new("spec").child("conversion");
    let strategy = text(conversion, "/strategy");
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let review_versions: Vec<&str> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match strategy {
        "" => errs.push(FieldError::required(&path.child("strategy"), "")),
        "None" => {
            if client_config.is_some() {
                errs.push(FieldError::forbidden(
                    &path.child("webhookClientConfig"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !review_versions.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("conversionReviewVersions"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            let client_path = path.child("webhookClientConfig");
            match client_config {
                None => errs.push(FieldError::required(
                    &client_path,
                    "required when strategy is set to Webhook",
                )),
                Some(config) => {
                    errs.extend(apimachinery::webhook_config::validate_client_config(
                        config,
                        &client_path,
                    ));
                    let bundle = text(config, "/caBundle");
                    if !bundle.is_empty() {
                        validate_ca_bundle(bundle, &client_path.child("caBundle"), &mut errs);
                    }
                }
            }
            registry::builtin::webhook_configurations::validate_review_versions(
                &review_versions,
                &path.child("conversionReviewVersions"),
                false,
                &mut errs,
            );
            if crd.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true)) {
                errs.push(FieldError::invalid(
                    &path.child("strategy"),
                    json!(strategy),
                    "must be None if spec.preserveUnknownFields is true",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("strategy"),
            json!(other),
            &["None", "Webhook"],
        )),
    }
    errs
}

fn validate_ca_bundle(bundle: &str, path: &FieldPath, errs: &mut ErrorList) {
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .unwrap_or_default();
    if let Err(e) = webhook::client::check_ca_bundle(&pem) {
        errs.push(FieldError::invalid(path, json!(bundle), &e.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_but_labels_and_annotations_is_restored() {
        let input =
            json!({"metadata": {"name": "a", "uid": "1", "generation": 1, "labels": {"x": "1"}}});
        let mut output = json!({"metadata": {"name": "a", "uid": "1", "generation": 42,
            "finalizers": ["foo"], "garbage": true, "labels": {"x": "2"}, "annotations": {"a": "b"}}});
        restore_metadata(&input, &mut output).unwrap();
        assert_eq!(
            output["metadata"],
            json!({"name": "a", "uid": "1", "generation": 1, "labels": {"x": "2"}, "annotations": {"a": "b"}})
        );
        let mut no_metadata = json!({});
        assert_eq!(
            restore_metadata(&input, &mut no_metadata).unwrap_err(),
            "missing metadata in converted object"
        );
    }

    #[test]
    fn identity_must_be_kept() {
        let input = json!({"kind": "K", "metadata": {"name": "a", "uid": "1"}});
        let output = json!({"kind": "K", "metadata": {"name": "a", "uid": "2"}});
        assert_eq!(
            validate_identity(&input, &output).unwrap_err(),
            "must have the same UID: 1 != 2"
        );
    }

    #[test]
    fn conversion_validation_as_upstream() {
        let crd = |conversion: Value| json!({"spec": {"conversion": conversion}});
        let messages = |v: Value| -> Vec<String> {
            validate(&crd(v)).iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            messages(json!({"strategy": "Webhook"})),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value: must specify one of v1, v1beta1",
            ]
        );
        assert_eq!(
            messages(json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}})),
            [
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
            ]
        );
        assert!(
            messages(json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://a.example.com/convert"},
            "conversionReviewVersions": ["v1"]}}))
            .is_empty()
        );
    }
}
