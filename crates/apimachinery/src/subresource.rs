//! The subresource a request addresses (`pods/status`, `deployments/scale`),
//! as upstream's RequestInfo names it.

use std::fmt;

/// The part of an object a request is about. Aggregated servers may define
/// subresources of their own: those are [`Subresource::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Subresource {
    /// The object itself.
    #[default]
    None,
    Status,
    Scale,
    /// `namespaces/{name}/finalize`.
    Finalize,
    /// `serviceaccounts/{name}/token`.
    Token,
    Binding,
    Eviction,
    EphemeralContainers,
    /// `pods/{name}/resize`: container resources only.
    Resize,
    Approval,
    Log,
    Exec,
    Attach,
    PortForward,
    Proxy,
    Other(Box<str>),
}

impl Subresource {
    pub fn parse(name: &str) -> Subresource {
        match name {
            "" => Subresource::None,
            "status" => Subresource::Status,
            "scale" => Subresource::Scale,
            "finalize" => Subresource::Finalize,
            "token" => Subresource::Token,
            "binding" => Subresource::Binding,
            "eviction" => Subresource::Eviction,
            "ephemeralcontainers" => Subresource::EphemeralContainers,
            "resize" => Subresource::Resize,
            "approval" => Subresource::Approval,
            "log" => Subresource::Log,
            "exec" => Subresource::Exec,
            "attach" => Subresource::Attach,
            "portforward" => Subresource::PortForward,
            "proxy" => Subresource::Proxy,
            other => Subresource::Other(other.into()),
        }
    }

    /// Upstream's spelling; empty for [`Subresource::None`].
    pub fn as_str(&self) -> &str {
        match self {
            Subresource::None => "",
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Token => "token",
            Subresource::Binding => "binding",
            Subresource::Eviction => "eviction",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Resize => "resize",
            Subresource::Approval => "approval",
            Subresource::Log => "log",
            Subresource::Exec => "exec",
            Subresource::Attach => "attach",
            Subresource::PortForward => "portforward",
            Subresource::Proxy => "proxy",
            Subresource::Other(name) => name,
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Subresource::None
    }

    /// The subresources that stream or upgrade a connection (upstream's
    /// long-running requests, next to watches).
    pub fn is_connection(&self) -> bool {
        matches!(
            self,
            Subresource::Log
                | Subresource::Exec
                | Subresource::Attach
                | Subresource::PortForward
                | Subresource::Proxy
        )
    }
}

impl fmt::Display for Subresource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "",
            "status",
            "scale",
            "finalize",
            "token",
            "binding",
            "eviction",
            "ephemeralcontainers",
            "approval",
            "log",
            "exec",
            "attach",
            "portforward",
            "proxy",
            "flunderstatus",
        ] {
            assert_eq!(Subresource::parse(name).as_str(), name);
        }
        assert_eq!(
            Subresource::parse("flunderstatus"),
            Subresource::Other("flunderstatus".into())
        );
        assert!(Subresource::parse("exec").is_connection());
        assert!(!Subresource::parse("status").is_connection());
    }
}
