//! `metav1.Status`: the wire error, and constructors that reproduce kube-apiserver's
//! codes, reasons and message texts (clients and users grep for them).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::field::{ErrorList, ErrorType};
use crate::gvk::GroupResource;

/// A `metav1.Status` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub kind: String,
    pub api_version: String,
    pub metadata: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    pub code: u16,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusCause {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// An API error: what every failing request turns into. `Display` is the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.message)]
pub struct StatusError(pub Box<Status>);

impl Status {
    pub fn success() -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            status: Some("Success".into()),
            code: 200,
            ..Default::default()
        }
    }
}

impl StatusError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        StatusError(Box::new(Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            status: Some("Failure".into()),
            message: message.into(),
            reason: reason.into(),
            code,
            ..Default::default()
        }))
    }

    pub fn code(&self) -> u16 {
        self.0.code
    }

    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    pub fn status(&self) -> &Status {
        &self.0
    }

    fn with_details(mut self, details: StatusDetails) -> Self {
        self.0.details = Some(details);
        self
    }

    fn named(gr: &GroupResource, name: &str) -> StatusDetails {
        StatusDetails {
            name: name.into(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        }
    }

    /// 404 `configmaps "x" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{gr} \"{name}\" not found"))
            .with_details(Self::named(gr, name))
    }

    /// 409 `configmaps "x" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
        )
        .with_details(Self::named(gr, name))
    }

    /// 409 Conflict: `Operation cannot be fulfilled on configmaps "x": <detail>`.
    pub fn conflict(gr: &GroupResource, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {detail}"),
        )
        .with_details(Self::named(gr, name))
    }

    /// The optimistic-concurrency conflict, with upstream's exact text.
    pub fn modified(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `ConfigMap "x" is invalid: [a, b]` with one cause per field error.
    /// A 422 `Invalid` listing `errors`, each once (upstream's aggregate drops
    /// repeated errors from the message; its causes would repeat them, but no
    /// client is helped by the same cause twice).
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &ErrorList) -> Self {
        let mut unique: Vec<&crate::FieldError> = Vec::with_capacity(errors.len());
        for e in errors {
            if !unique.contains(&e) {
                unique.push(e);
            }
        }
        let errors = unique;
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = match errors.len() {
            0 => format!("{qualified} \"{name}\" is invalid"),
            1 => format!("{qualified} \"{name}\" is invalid: {}", errors[0]),
            _ => format!(
                "{qualified} \"{name}\" is invalid: [{}]",
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.kind.cause_reason().into(),
                message: e.message_without_field(),
                field: e.field.clone(),
            })
            .collect();
        Self::new(422, "Invalid", message).with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes,
            ..Default::default()
        })
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "Unauthorized", message)
    }

    /// 403 `configmaps "x" is forbidden: <detail>` (name may be empty).
    pub fn forbidden(gr: &GroupResource, name: &str, detail: &str) -> Self {
        let message = if gr.resource.is_empty() && gr.group.is_empty() {
            format!("forbidden: {detail}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {detail}")
        } else {
            format!("{gr} \"{name}\" is forbidden: {detail}")
        };
        Self::new(403, "Forbidden", message).with_details(Self::named(gr, name))
    }

    /// 405 `the server does not allow this method on the requested resource`.
    pub fn method_not_supported(gr: &GroupResource, action: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{action} is not supported on resources of kind \"{gr}\""),
        )
        .with_details(StatusDetails {
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        })
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 405 for a method no route serves on a resource path (upstream's
    /// go-restful answer: a generic server response with empty details).
    pub fn no_route_for_method() -> Self {
        Self::method_not_allowed("the server does not allow this method on the requested resource")
            .with_details(StatusDetails::default())
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// With `details: {}`, as upstream's generic server responses (go-restful's
    /// 405 and 406) carry them.
    pub fn with_empty_details(self) -> Self {
        self.with_details(StatusDetails::default())
    }

    /// 410 Expired (e.g. `too old resource version: 5 (10)`).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 410 Gone (watch from a compacted revision).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }

    /// 415 listing what the endpoint accepts (upstream names no offending type).
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                message: message.to_string(),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// 404 for a path that names no resource at all.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// Add a single cause (used e.g. for SSA conflicts).
    pub fn with_causes(mut self, causes: Vec<StatusCause>) -> Self {
        self.0.details.get_or_insert_with(Default::default).causes = causes;
        self
    }

    /// Ask the client to retry after `seconds` (`details.retryAfterSeconds`
    /// and a `Retry-After` header; nothing for 0, as upstream omits it).
    pub fn with_retry_after(mut self, seconds: u32) -> Self {
        if seconds > 0 {
            self.0
                .details
                .get_or_insert_with(Default::default)
                .retry_after_seconds = Some(seconds);
        }
        self
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&*self.0).unwrap_or_default()
    }
}

impl ErrorType {
    /// The `StatusCause.reason` string upstream uses for this error type.
    pub fn cause_reason(&self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{FieldError, FieldPath};

    #[test]
    fn not_found_text_matches_upstream() {
        let e = StatusError::not_found(&GroupResource::new("", "configmaps"), "x");
        assert_eq!(e.to_string(), "configmaps \"x\" not found");
        assert_eq!(e.code(), 404);
        let e = StatusError::not_found(&GroupResource::new("coordination.k8s.io", "leases"), "l");
        assert_eq!(e.to_string(), "leases.coordination.k8s.io \"l\" not found");
    }

    #[test]
    fn invalid_lists_every_error_with_field_paths() {
        let errs = vec![
            FieldError::required(&FieldPath::new("metadata").child("name"), ""),
            FieldError::invalid(&FieldPath::new("data"), serde_json::json!("a b"), "bad key"),
        ];
        let e = StatusError::invalid("", "ConfigMap", "x", &errs);
        assert_eq!(
            e.to_string(),
            "ConfigMap \"x\" is invalid: [metadata.name: Required value, data: Invalid value: \"a b\": bad key]"
        );
        let causes = &e.status().details.as_ref().unwrap().causes;
        assert_eq!(causes[0].field, "metadata.name");
        assert_eq!(causes[0].reason, "FieldValueRequired");
    }
}
