//! Decoding errors of protobuf request bodies.

use thiserror::Error;

/// Why a protobuf request body could not be decoded. Every variant describes
/// a client error (HTTP 400), except [`DecodeError::UnsupportedKind`], which a
/// server may prefer to report as 415 Unsupported Media Type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body does not start with the 4-byte `k8s\0` prefix.
    #[error(
        "not a Kubernetes protobuf message: the body does not start with the \"k8s\\x00\" prefix"
    )]
    BadMagic,
    /// The `runtime.Unknown` envelope lacks `typeMeta.apiVersion` or `typeMeta.kind`.
    #[error("protobuf envelope has no apiVersion and kind")]
    MissingTypeMeta,
    /// The envelope's `contentEncoding` is set (no encoding is supported).
    #[error("unsupported contentEncoding {0:?} in the protobuf envelope")]
    UnsupportedContentEncoding(String),
    /// The envelope's `contentType` names something other than protobuf.
    #[error("unsupported contentType {0:?} in the protobuf envelope")]
    UnsupportedContentType(String),
    /// No message table for this apiVersion/kind; see [`crate::supports`].
    #[error("decoding {kind} {api_version} from protobuf is not supported; send JSON instead")]
    UnsupportedKind {
        /// From the envelope.
        api_version: String,
        /// From the envelope.
        kind: String,
    },
    /// The input ends in the middle of a field.
    #[error("truncated protobuf message")]
    Truncated,
    /// A varint is longer than 64 bits.
    #[error("protobuf varint overflows 64 bits")]
    VarintOverflow,
    /// A field key with field number 0 or above 2^29-1.
    #[error("invalid protobuf field number {0}")]
    InvalidFieldNumber(u64),
    /// Wire types 3 and 4 (groups) and the undefined 6 and 7.
    #[error("unsupported protobuf wire type {0}")]
    UnsupportedWireType(u8),
    /// A known field arrived with a wire type that does not fit its type.
    #[error("wrong protobuf wire type {found} (expected {expected})")]
    WrongWireType {
        /// What the schema calls for.
        expected: u8,
        /// What was on the wire.
        found: u8,
    },
    /// A well-formed field whose value has no JSON form (e.g. an
    /// `IntOrString` of unknown type, a time outside years 0-9999, a
    /// `FieldsV1` that is not JSON).
    #[error("{0}")]
    InvalidValue(String),
    /// Messages nested deeper than the decoder allows.
    #[error("protobuf message nested too deeply")]
    TooDeep,
    /// Another error, at a JSON path such as `Service.spec.ports[0].targetPort`.
    #[error("{path}: {source}")]
    At {
        /// Where in the object the error occurred.
        path: String,
        /// What went wrong there.
        source: Box<DecodeError>,
    },
}

impl DecodeError {
    /// The error without its location.
    pub fn root_cause(&self) -> &DecodeError {
        match self {
            DecodeError::At { source, .. } => source.root_cause(),
            other => other,
        }
    }

    /// Where in the decoded object the error occurred, if known.
    pub fn path(&self) -> Option<&str> {
        match self {
            DecodeError::At { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Prefixes the error's location with `segment` (`name`, `[3]`, `[key]`).
    pub(crate) fn within(self, segment: &str) -> DecodeError {
        match self {
            DecodeError::At { path, source } => {
                let sep = if path.starts_with('[') { "" } else { "." };
                DecodeError::At {
                    path: format!("{segment}{sep}{path}"),
                    source,
                }
            }
            other => DecodeError::At {
                path: segment.to_string(),
                source: Box::new(other),
            },
        }
    }
}

/// Why an object could not be encoded as protobuf: a kind without a message
/// table (answer it as JSON instead), or a value that does not fit its field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// No message table for this apiVersion/kind; see [`crate::supports`].
    #[error("encoding {kind} {api_version} as protobuf is not supported")]
    UnsupportedKind {
        /// From the object.
        api_version: String,
        /// From the object.
        kind: String,
    },
    /// A value of the wrong JSON type for its field, at a path such as
    /// `spec.replicas`.
    #[error("{path}: {message}")]
    InvalidValue {
        /// Where in the object (empty at the top).
        path: String,
        /// What is wrong there.
        message: String,
    },
}

impl EncodeError {
    pub(crate) fn invalid(message: String) -> EncodeError {
        EncodeError::InvalidValue {
            path: String::new(),
            message,
        }
    }

    /// Prefixes the error's location with `segment` (`name`, `[3]`, `[key]`).
    pub(crate) fn within(self, segment: &str) -> EncodeError {
        match self {
            EncodeError::InvalidValue { path, message } => {
                let sep = if path.is_empty() || path.starts_with('[') {
                    ""
                } else {
                    "."
                };
                EncodeError::InvalidValue {
                    path: format!("{segment}{sep}{path}"),
                    message,
                }
            }
            other => other,
        }
    }
}
