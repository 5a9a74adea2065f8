//! Query-string parsing into the options the registry understands.

use apimachinery::StatusError;
use apimachinery::meta::parse_resource_version;
use apimachinery::options::FieldValidation;
use apimachinery::selector::{FieldSelector, LabelSelector};
use foldhash::HashMap;
use registry::options::{ContinueToken, DeleteOptions, PropagationPolicy, ReadFreshness};
use registry::{ListOptions, WatchOptions};

#[derive(Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        Query(
            form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    /// A boolean parameter as Go's `strconv.ParseBool` reads it.
    fn bool_value(&self, key: &str) -> Result<Option<bool>, StatusError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(Some(true)),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(Some(false)),
            Some(v) => Err(StatusError::bad_request(format!(
                "invalid value for {key}: {v:?}"
            ))),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>, StatusError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| StatusError::bad_request(format!("invalid value for {key}: {v:?}"))),
        }
    }

    /// `fieldValidation` (`Warn` when absent or empty).
    pub fn field_validation(&self) -> Result<FieldValidation, StatusError> {
        let value = self.get("fieldValidation").unwrap_or_default();
        FieldValidation::parse(value)
            .ok_or_else(|| Self::unsupported_field_validation(value, "CreateOptions"))
    }

    /// Upstream's validation of a write's options (`ValidateCreateOptions`,
    /// `ValidateUpdateOptions`, `ValidatePatchOptions`): a 422 on
    /// `<options_kind>.meta.k8s.io ""` listing every problem. `patch_type` is
    /// the request's content type for a PATCH (`fieldManager` is required for
    /// an apply, `force` only allowed there), `None` for other writes.
    pub fn check_write_options(
        &self,
        options_kind: &str,
        patch_type: Option<&str>,
    ) -> Result<(), StatusError> {
        // No options and no patch: nothing to refuse (what the checks find
        // for them, held equal by a test), and no field paths built to find it.
        if self.0.is_empty() && patch_type.is_none() {
            return Ok(());
        }
        self.check_each_write_option(options_kind, patch_type)
    }

    /// [`Self::check_write_options`], every check made.
    fn check_each_write_option(
        &self,
        options_kind: &str,
        patch_type: Option<&str>,
    ) -> Result<(), StatusError> {
        let manager = self.get("fieldManager").unwrap_or_default();
        let mut errs = apimachinery::ErrorList::new();
        if let Some(content_type) = patch_type {
            let media_type = content_type.split(';').next().unwrap_or_default().trim();
            if media_type != "application/apply-patch+yaml" {
                if self.get("force").is_some() {
                    errs.push(apimachinery::FieldError::forbidden(
                        &apimachinery::FieldPath::new("force"),
                        "may not be specified for non-apply patch",
                    ));
                }
            } else if manager.is_empty() {
                errs.push(apimachinery::FieldError::required(
                    &apimachinery::FieldPath::new("fieldManager"),
                    "is required for apply patch",
                ));
            }
        }
        errs.extend(apimachinery::validation::validate_field_manager(
            manager,
            &apimachinery::FieldPath::new("fieldManager"),
        ));
        if self.field_validation().is_err() {
            errs.push(Self::field_validation_error(
                self.get("fieldValidation").unwrap_or_default(),
            ));
        }
        if errs.is_empty() {
            return Ok(());
        }
        Err(StatusError::invalid("meta.k8s.io", options_kind, "", &errs))
    }

    fn unsupported_field_validation(value: &str, options_kind: &str) -> StatusError {
        StatusError::invalid(
            "meta.k8s.io",
            options_kind,
            "",
            &vec![Self::field_validation_error(value)],
        )
    }

    fn field_validation_error(value: &str) -> apimachinery::FieldError {
        apimachinery::FieldError::not_supported(
            &apimachinery::FieldPath::new("fieldValidation"),
            serde_json::Value::String(value.to_string()),
            &["", "Ignore", "Strict", "Warn"],
        )
    }

    pub fn dry_run(&self) -> Result<bool, StatusError> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(StatusError::bad_request(format!(
                "Invalid dry run value: {other:?}: supported values: \"All\""
            ))),
        }
    }

    fn selectors(&self) -> Result<(Option<LabelSelector>, Option<FieldSelector>), StatusError> {
        let labels = match self.get("labelSelector").filter(|s| !s.is_empty()) {
            Some(s) => Some(LabelSelector::parse(s).map_err(|e| {
                StatusError::bad_request(format!("unable to parse requirement: {e}"))
            })?),
            None => None,
        };
        let fields =
            match self.get("fieldSelector").filter(|s| !s.is_empty()) {
                Some(s) => Some(FieldSelector::parse(s).map_err(|e| {
                    StatusError::bad_request(format!("invalid field selector: {e}"))
                })?),
                None => None,
            };
        Ok((labels, fields))
    }

    fn resource_version(&self) -> Result<Option<i64>, StatusError> {
        Ok(parse_resource_version(
            self.get("resourceVersion").unwrap_or(""),
        )?)
    }

    pub fn list_options(&self) -> Result<ListOptions, StatusError> {
        let (label_selector, field_selector) = self.selectors()?;
        let limit = self.int("limit")?.unwrap_or(0).max(0) as usize;
        let continue_token = match self.get("continue").filter(|c| !c.is_empty()) {
            Some(c) => Some(ContinueToken::decode(c)?),
            None => None,
        };
        let rv = self.resource_version()?;
        let freshness = match (self.get("resourceVersionMatch").unwrap_or(""), rv) {
            ("", None) => ReadFreshness::Latest,
            ("", Some(0)) => ReadFreshness::Any,
            // Legacy: an RV with a limit pages through that exact snapshot.
            ("", Some(rv)) if limit > 0 => ReadFreshness::Exact(rv),
            ("", Some(rv)) => ReadFreshness::NotOlderThan(rv),
            ("NotOlderThan", Some(rv)) => ReadFreshness::NotOlderThan(rv),
            ("Exact", Some(rv)) if rv > 0 => ReadFreshness::Exact(rv),
            (m @ ("NotOlderThan" | "Exact"), _) => {
                return Err(StatusError::bad_request(format!(
                    "resourceVersionMatch \"{m}\" is forbidden for resourceVersion \"{}\"",
                    self.get("resourceVersion").unwrap_or("")
                )));
            }
            (m, _) => {
                return Err(StatusError::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        };
        if continue_token.is_some() && rv.is_some_and(|r| r != 0) {
            return Err(StatusError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(ListOptions {
            label_selector,
            field_selector,
            limit,
            continue_token,
            freshness,
        })
    }

    pub fn watch_options(&self) -> Result<WatchOptions, StatusError> {
        let (label_selector, field_selector) = self.selectors()?;
        let send_initial_events = self.flag("sendInitialEvents");
        let bookmarks = self.flag("allowWatchBookmarks");
        if send_initial_events && !bookmarks {
            return Err(StatusError::bad_request(
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            ));
        }
        Ok(WatchOptions {
            label_selector,
            field_selector,
            resource_version: self.resource_version()?,
            send_initial_events,
            bookmarks,
        })
    }

    pub fn timeout_seconds(&self) -> Result<Option<i64>, StatusError> {
        self.int("timeoutSeconds")
    }

    /// DELETE options from the query (the body, if any, is merged by the caller).
    pub fn delete_options(&self) -> Result<DeleteOptions, StatusError> {
        let orphan_dependents = self.bool_value("orphanDependents")?;
        let propagation_policy = match (self.get("propagationPolicy"), orphan_dependents) {
            (Some(policy), _) => Some(parse_propagation_policy(policy)?),
            (None, Some(orphan)) => Some(PropagationPolicy::from_orphan_dependents(orphan)),
            (None, None) => None,
        };
        Ok(DeleteOptions {
            grace_period_seconds: self.int("gracePeriodSeconds")?,
            propagation_policy,
            orphan_dependents,
            ..Default::default()
        })
    }
}

/// A `propagationPolicy` value, or upstream's error for an unknown one.
pub fn parse_propagation_policy(policy: &str) -> Result<PropagationPolicy, StatusError> {
    PropagationPolicy::parse(policy).ok_or_else(|| {
        StatusError::bad_request(format!(
            "DeleteOptions.propagationPolicy: Unsupported value: \"{policy}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for a write without options answers what every check does.
    #[test]
    fn no_options_pass_every_write_check() {
        for kind in ["CreateOptions", "UpdateOptions", "PatchOptions"] {
            let empty = Query::parse(None);
            assert!(empty.check_write_options(kind, None).is_ok());
            assert!(empty.check_each_write_option(kind, None).is_ok());
            assert!(
                Query::parse(Some(""))
                    .check_write_options(kind, None)
                    .is_ok()
            );
        }
        // With options or a patch, every check is made.
        let bad = Query::parse(Some("fieldValidation=Nope"));
        assert!(bad.check_write_options("CreateOptions", None).is_err());
        let apply = Query::parse(None);
        assert!(
            apply
                .check_write_options("PatchOptions", Some("application/apply-patch+yaml"))
                .is_err()
        );
    }
}
