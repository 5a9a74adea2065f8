//! The verb of a resource request, as upstream's RequestInfo names it.

use std::fmt;

/// What a resource request does. Non-resource requests (discovery, health,
/// OpenAPI) have [`Verb::None`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Verb {
    #[default]
    None,
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// A method or path shape no verb matches (e.g. `POST` to an object).
    Unknown,
}

impl Verb {
    /// The verb for `method` on a collection (`on_object` false) or an object,
    /// `watch` when the query asked for one.
    pub fn of(method: &str, on_object: bool, watch: bool) -> Verb {
        match (method, on_object) {
            ("GET" | "HEAD", false) if watch => Verb::Watch,
            ("GET" | "HEAD", false) => Verb::List,
            ("GET" | "HEAD", true) => Verb::Get,
            ("POST", _) => Verb::Create,
            ("PUT", _) => Verb::Update,
            ("PATCH", _) => Verb::Patch,
            ("DELETE", false) => Verb::DeleteCollection,
            ("DELETE", true) => Verb::Delete,
            _ => Verb::Unknown,
        }
    }

    /// Upstream's spelling (`deletecollection`); empty for [`Verb::None`].
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::None => "",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Unknown => "unknown",
        }
    }

    pub fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Verb {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
