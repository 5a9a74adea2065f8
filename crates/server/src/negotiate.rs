//! Content negotiation: which representation a client asked for (`Accept`), and
//! decoding request bodies (`Content-Type`). Pure.

use apimachinery::StatusError;
use serde_json::Value;

/// A media range from an `Accept` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaType {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub fn parse_accept(header: &str) -> Vec<MediaType> {
    header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';').map(str::trim);
            let essence = pieces.next()?.to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| {
                    (
                        k.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    )
                })
                .collect();
            Some(MediaType { essence, params })
        })
        .collect()
}

/// The representation of a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// meta.k8s.io Table at this version (`v1` or `v1beta1`).
    Table(String),
    /// PartialObjectMetadata(List) at this version.
    PartialMetadata(String),
    /// `application/vnd.kubernetes.protobuf`: built-in kinds only, as
    /// client-go's typed clients ask for them first.
    Protobuf,
}

impl Output {
    pub fn content_type(&self) -> String {
        match self {
            Output::Json => "application/json".into(),
            Output::Yaml => "application/yaml".into(),
            Output::Table(v) => format!("application/json;as=Table;v={v};g=meta.k8s.io"),
            Output::PartialMetadata(v) => {
                format!("application/json;as=PartialObjectMetadata;v={v};g=meta.k8s.io")
            }
            Output::Protobuf => protobuf::CONTENT_TYPE.into(),
        }
    }

    /// The content type of answers that are not the resource's objects (a
    /// `Status`, a deleted collection, a `Scale`): JSON for a Table or
    /// PartialObjectMetadata request, as upstream answers them.
    pub fn content_type_of_values(&self) -> String {
        match self {
            Output::Yaml | Output::Protobuf => self.content_type(),
            _ => Output::Json.content_type(),
        }
    }

    /// The content type of a watch stream: protobuf frames are
    /// length-delimited, `;stream=watch` as upstream's watch handler says.
    pub fn watch_content_type(&self) -> String {
        match self {
            Output::Protobuf => format!("{};stream=watch", protobuf::CONTENT_TYPE),
            other => other.content_type(),
        }
    }
}

fn is_json(essence: &str) -> bool {
    matches!(essence, "application/json" | "*/*" | "application/*")
}

/// Pick the first acceptable representation in the client's order. Protobuf
/// is acceptable when the resource has a protobuf form (`has_protobuf`:
/// built-in kinds); Tables and PartialObjectMetadata when the endpoint
/// converts to them (`transforms`: not reviews, tokens, bindings or
/// evictions, whose storage has no table convertor upstream); otherwise the
/// client's next choice is taken.
pub fn negotiate(
    accept: Option<&str>,
    has_protobuf: bool,
    transforms: bool,
) -> Result<Output, NotAcceptable> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    let mut served_type_asked = false;
    for media in parse_accept(accept) {
        let version = media.param("v").unwrap_or("v1");
        let meta_group = media.param("g") == Some("meta.k8s.io");
        served_type_asked |= is_json(&media.essence)
            || media.essence == "application/yaml"
            || media.essence == protobuf::CONTENT_TYPE;
        match (media.essence.as_str(), media.param("as")) {
            (e, Some("Table"))
                if transforms
                    && is_json(e)
                    && meta_group
                    && matches!(version, "v1" | "v1beta1") =>
            {
                return Ok(Output::Table(version.into()));
            }
            (e, Some("PartialObjectMetadata" | "PartialObjectMetadataList"))
                if transforms
                    && is_json(e)
                    && meta_group
                    && matches!(version, "v1" | "v1beta1") =>
            {
                return Ok(Output::PartialMetadata(version.into()));
            }
            (_, Some(_)) => continue,
            (e, None) if is_json(e) => return Ok(Output::Json),
            (e, None) if has_protobuf && e == protobuf::CONTENT_TYPE => {
                return Ok(Output::Protobuf);
            }
            ("application/yaml", None) => return Ok(Output::Yaml),
            _ => continue,
        }
    }
    Err(NotAcceptable { served_type_asked })
}

/// No representation the client accepts: the caller words the 406 for what
/// it serves ([`not_acceptable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAcceptable {
    /// A media type the server serves was asked for, with parameters that
    /// ruled it out (`as=Foo`): upstream's handler, not go-restful, refuses.
    served_type_asked: bool,
}

/// Who refuses a request with [`NotAcceptable`]: upstream's words differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refuser {
    /// A built-in kind's object path (go-restful's answer).
    BuiltinObject,
    /// A built-in kind's collection path, which also serves watches.
    BuiltinCollection,
    /// The CRD handler.
    CustomResource,
}

/// The 406 `Status` kube-apiserver answers when nothing in `Accept` fits.
pub fn not_acceptable(refuser: Refuser, refusal: NotAcceptable) -> StatusError {
    const BUILTIN: &str = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    // go-restful routes on the media type alone; parameters are the
    // handler's to refuse, in the CRD handler's words.
    let refuser = if refusal.served_type_asked {
        Refuser::CustomResource
    } else {
        refuser
    };
    match refuser {
        Refuser::CustomResource => StatusError::not_acceptable(
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ),
        Refuser::BuiltinObject => {
            StatusError::not_acceptable(BUILTIN).with_empty_details()
        }
        Refuser::BuiltinCollection => StatusError::not_acceptable(format!(
            "{BUILTIN}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        ))
        .with_empty_details(),
    }
}

/// What a request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    Yaml,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
    /// `application/vnd.kubernetes.protobuf` (kubectl's typed clients send it).
    Protobuf,
}

/// What object bodies (create, update) may be sent as.
pub const OBJECT_MEDIA_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// What patches may be sent as, in upstream's order; custom resources take no
/// strategic merge patch.
pub fn patch_media_types(structured: bool) -> &'static [&'static str] {
    const ALL: [&str; 4] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];
    const UNSTRUCTURED: [&str; 3] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if structured { &ALL } else { &UNSTRUCTURED }
}

pub fn body_kind(content_type: Option<&str>) -> Result<BodyKind, StatusError> {
    // No Content-Type means JSON; one that does not parse as a media type is refused.
    let content_type = content_type.map(str::trim).unwrap_or("");
    if content_type.is_empty() {
        return Ok(BodyKind::Json);
    }
    // Up to the first `;` (an ASCII byte, so a character boundary).
    let essence = content_type[..content_type
        .bytes()
        .position(|b| b == b';')
        .unwrap_or(content_type.len())]
        .trim();
    // Compared ignoring ASCII case, not lower-cased into a copy.
    BODY_KINDS
        .iter()
        .find(|(name, _)| essence.eq_ignore_ascii_case(name))
        .map(|&(_, kind)| kind)
        .ok_or_else(|| StatusError::unsupported_media_type(&OBJECT_MEDIA_TYPES))
}

/// The media types bodies are read as (lower case), the most common first.
const BODY_KINDS: [(&str, BodyKind); 11] = [
    ("application/json", BodyKind::Json),
    ("application/vnd.kubernetes.protobuf", BodyKind::Protobuf),
    ("application/yaml", BodyKind::Yaml),
    ("application/merge-patch+json", BodyKind::MergePatch),
    (
        "application/strategic-merge-patch+json",
        BodyKind::StrategicMergePatch,
    ),
    ("application/apply-patch+yaml", BodyKind::ApplyPatch),
    ("application/json-patch+json", BodyKind::JsonPatch),
    ("application/apply-patch+json", BodyKind::ApplyPatch),
    ("application/x-yaml", BodyKind::Yaml),
    ("text/yaml", BodyKind::Yaml),
    ("*/*", BodyKind::Json),
];

/// Decode a JSON or YAML document into a value.
pub fn decode(kind: BodyKind, body: &[u8]) -> Result<Value, StatusError> {
    if kind == BodyKind::Protobuf {
        return protobuf::decode(body).map_err(|e| {
            StatusError::bad_request(format!("the object provided is unrecognized: {e}"))
        });
    }
    let is_yaml = matches!(kind, BodyKind::Yaml | BodyKind::ApplyPatch);
    let parsed = if is_yaml {
        let text = std::str::from_utf8(body)
            .map_err(|_| StatusError::bad_request("the body of the request is not valid UTF-8"))?;
        serde_saphyr::from_str::<Value>(text).map_err(|e| format!("yaml: {e}"))
    } else {
        apimachinery::json::from_slice::<Value>(body).map_err(|e| format!("json parse error: {e}"))
    };
    parsed.map_err(|e| {
        StatusError::bad_request(format!(
            "the object provided is unrecognized: couldn't get version/kind; {e}"
        ))
    })
}

pub fn to_yaml(value: &Value) -> Vec<u8> {
    serde_saphyr::to_string(value)
        .unwrap_or_default()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body_kind` as it was written first: the essence lower-cased, then matched.
    fn body_kind_plain(content_type: Option<&str>) -> Result<BodyKind, StatusError> {
        let content_type = content_type.map(str::trim).unwrap_or("");
        if content_type.is_empty() {
            return Ok(BodyKind::Json);
        }
        let essence = content_type
            .split(';')
            .next()
            .map(|s| s.trim().to_ascii_lowercase())
            .unwrap_or_default();
        Ok(match essence.as_str() {
            "application/json" | "*/*" => BodyKind::Json,
            "application/yaml" | "application/x-yaml" | "text/yaml" => BodyKind::Yaml,
            "application/json-patch+json" => BodyKind::JsonPatch,
            "application/merge-patch+json" => BodyKind::MergePatch,
            "application/strategic-merge-patch+json" => BodyKind::StrategicMergePatch,
            "application/apply-patch+yaml" | "application/apply-patch+json" => BodyKind::ApplyPatch,
            "application/vnd.kubernetes.protobuf" => BodyKind::Protobuf,
            _ => return Err(StatusError::unsupported_media_type(&OBJECT_MEDIA_TYPES)),
        })
    }

    #[test]
    fn body_kind_equals_the_lower_cased_match() {
        let mut cases = vec![
            None,
            Some(""),
            Some("  "),
            Some(";"),
            Some("application/JSON; charset=utf-8"),
            Some(" Application/Yaml "),
            Some("application/json ;x=y"),
            Some("application/jsonx"),
            Some("application/json-patch+json"),
            Some("APPLICATION/APPLY-PATCH+YAML"),
            Some("text/plain"),
            Some("application/ẞjson"),
            Some("*/*"),
        ];
        let names: Vec<String> = BODY_KINDS
            .iter()
            .flat_map(|(name, _)| [name.to_string(), name.to_ascii_uppercase()])
            .collect();
        cases.extend(names.iter().map(|n| Some(n.as_str())));
        for case in cases {
            let (fast, plain) = (body_kind(case), body_kind_plain(case));
            match (&fast, &plain) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{case:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_json(), b.to_json(), "{case:?}"),
                _ => panic!("{case:?}: {fast:?} but {plain:?}"),
            }
        }
    }

    #[test]
    fn kubectl_table_accept() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(a), false, true).unwrap(),
            Output::Table("v1".into())
        );
    }

    #[test]
    fn protobuf_first_falls_back_to_json() {
        let a = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(negotiate(Some(a), false, true).unwrap(), Output::Json);
        assert!(negotiate(Some("application/vnd.kubernetes.protobuf"), false, true).is_err());
        let client_go = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(
            negotiate(Some(client_go), true, true).unwrap(),
            Output::Protobuf
        );
        assert_eq!(
            negotiate(Some(client_go), false, true).unwrap(),
            Output::Json
        );
        // The metadata client's protobuf PartialObjectMetadataList: JSON's form.
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiate(Some(metadata), true, true).unwrap(),
            Output::PartialMetadata("v1".into())
        );
    }

    #[test]
    fn partial_metadata() {
        let a = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(a), false, true).unwrap(),
            Output::PartialMetadata("v1".into())
        );
    }

    #[test]
    fn yaml_bodies_decode() {
        let v = decode(
            BodyKind::Yaml,
            b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: '1'\n",
        )
        .unwrap();
        assert_eq!(v["data"]["a"], "1");
        assert_eq!(decode(BodyKind::Json, b"{").unwrap_err().code(), 400);
    }
}
