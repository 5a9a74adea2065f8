//! Kubernetes' authorizer library (`library.Authz`), for admission policies:
//! `authorizer.group('apps').resource('deployments').namespace('ns')
//! .check('create').allowed()`, `authorizer.path('/healthz').check('get')`,
//! `authorizer.serviceAccount(ns, name)` to ask for another identity, and a
//! decision's `allowed()`, `reason()`, `errored()`, `error()`. The checks are
//! answered by the server's authorizer through [`Authorize`].

use std::fmt;
use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::{DeclarationError, Env};

use super::{Args, Ret, boolean, member, opaque, opaque_arg, opaque_type, string, string_arg};

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

pub(crate) const DECLARATIONS: &[&str] = &[
    "[kubernetes.authorization.Authorizer].path(string) -> kubernetes.authorization.PathCheck",
    "[kubernetes.authorization.Authorizer].group(string) -> kubernetes.authorization.GroupCheck",
    "[kubernetes.authorization.Authorizer].serviceAccount(string, string) -> kubernetes.authorization.Authorizer",
    "[kubernetes.authorization.GroupCheck].resource(string) -> kubernetes.authorization.ResourceCheck",
    "[kubernetes.authorization.ResourceCheck].subresource(string) -> kubernetes.authorization.ResourceCheck",
    "[kubernetes.authorization.ResourceCheck].namespace(string) -> kubernetes.authorization.ResourceCheck",
    "[kubernetes.authorization.ResourceCheck].name(string) -> kubernetes.authorization.ResourceCheck",
    "[kubernetes.authorization.ResourceCheck].check(string) -> kubernetes.authorization.Decision",
    "[kubernetes.authorization.PathCheck].check(string) -> kubernetes.authorization.Decision",
    "[kubernetes.authorization.Decision].allowed() -> bool",
    "[kubernetes.authorization.Decision].reason() -> string",
    "[kubernetes.authorization.Decision].errored() -> bool",
    "[kubernetes.authorization.Decision].error() -> string",
];

/// One question to the authorizer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthzCheck {
    /// `Some((namespace, name))` to ask for that service account instead of
    /// the requesting user.
    pub service_account: Option<(String, String)>,
    pub verb: String,
    /// A non-resource path (`/healthz`); empty for resource checks.
    pub path: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// The authorizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    pub allowed: bool,
    pub reason: String,
    /// Set when the authorizer failed to decide.
    pub error: String,
}

/// Answers the checks of the `authorizer` variable (for the requesting
/// user, or the service account a check names).
pub trait Authorize: Send + Sync {
    fn check(&self, check: &AuthzCheck) -> AuthzDecision;
}

/// The `authorizer` value and the checks built from it.
#[derive(Clone)]
struct Builder {
    authorize: Arc<dyn Authorize>,
    check: AuthzCheck,
    type_name: &'static str,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", self.type_name, self.check)
    }
}

impl PartialEq for Builder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authorize, &other.authorize)
            && self.check == other.check
            && self.type_name == other.type_name
    }
}

impl Eq for Builder {}

impl cel::objects::Opaque for Builder {
    fn runtime_type_name(&self) -> &str {
        self.type_name
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision(AuthzDecision);

impl cel::objects::Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        DECISION
    }
}

/// The `authorizer` variable's value.
pub(crate) fn authorizer(authorize: Arc<dyn Authorize>) -> cel::objects::Value {
    cel::objects::Value::Opaque(Arc::new(Builder {
        authorize,
        check: AuthzCheck::default(),
        type_name: AUTHORIZER,
    }))
}

fn builder(args: &Args<'_, '_>, want: &'static str) -> Result<Builder, cel::ExecutionError> {
    opaque_arg::<Builder>(args, 0, want)
}

/// The receiver, turned into `type_name` with `change` applied.
fn step<'b, 'v>(
    args: Args<'b, 'v>,
    from: &'static str,
    type_name: &'static str,
    change: fn(&mut AuthzCheck, &str),
) -> Ret<'b, 'v> {
    let mut b = builder(&args, from)?;
    change(&mut b.check, string_arg(&args, 1)?);
    b.type_name = type_name;
    opaque(b)
}

fn path<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, AUTHORIZER, PATH_CHECK, |c, v| c.path = v.to_string())
}

fn group<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, AUTHORIZER, GROUP_CHECK, |c, v| {
        c.group = v.to_string()
    })
}

fn resource<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, GROUP_CHECK, RESOURCE_CHECK, |c, v| {
        c.resource = v.to_string()
    })
}

fn subresource<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, RESOURCE_CHECK, RESOURCE_CHECK, |c, v| {
        c.subresource = v.to_string()
    })
}

fn namespace<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, RESOURCE_CHECK, RESOURCE_CHECK, |c, v| {
        c.namespace = v.to_string()
    })
}

fn name<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    step(args, RESOURCE_CHECK, RESOURCE_CHECK, |c, v| {
        c.name = v.to_string()
    })
}

fn service_account<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let mut b = builder(&args, AUTHORIZER)?;
    let namespace = string_arg(&args, 1)?.to_string();
    let name = string_arg(&args, 2)?.to_string();
    b.check.service_account = Some((namespace, name));
    opaque(b)
}

fn check<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let b = match builder(&args, RESOURCE_CHECK) {
        Ok(b) => b,
        Err(_) => builder(&args, PATH_CHECK)?,
    };
    let mut question = b.check.clone();
    question.verb = string_arg(&args, 1)?.to_string();
    opaque(Decision(b.authorize.check(&question)))
}

fn decision(args: &Args<'_, '_>) -> Result<AuthzDecision, cel::ExecutionError> {
    Ok(opaque_arg::<Decision>(args, 0, DECISION)?.0)
}

fn allowed<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(decision(&args)?.allowed)
}

fn reason<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(decision(&args)?.reason)
}

fn errored<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(!decision(&args)?.error.is_empty())
}

fn error<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string(decision(&args)?.error)
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = opaque_type;
    let s = || STRING_TYPE;
    member(
        env,
        "path",
        "authorizer_path",
        t(AUTHORIZER),
        vec![s()],
        path,
    )?;
    member(
        env,
        "group",
        "authorizer_group",
        t(AUTHORIZER),
        vec![s()],
        group,
    )?;
    member(
        env,
        "serviceAccount",
        "authorizer_serviceaccount",
        t(AUTHORIZER),
        vec![s(), s()],
        service_account,
    )?;
    member(
        env,
        "resource",
        "groupcheck_resource",
        t(GROUP_CHECK),
        vec![s()],
        resource,
    )?;
    for (n, id, f) in [
        (
            "subresource",
            "resourcecheck_subresource",
            subresource as cel::common::functions::Function,
        ),
        ("namespace", "resourcecheck_namespace", namespace),
        ("name", "resourcecheck_name", name),
        ("check", "resourcecheck_check", check),
    ] {
        member(env, n, id, t(RESOURCE_CHECK), vec![s()], f)?;
    }
    member(
        env,
        "check",
        "pathcheck_check",
        t(PATH_CHECK),
        vec![s()],
        check,
    )?;
    for (n, id, f) in [
        (
            "allowed",
            "decision_allowed",
            allowed as cel::common::functions::Function,
        ),
        ("reason", "decision_reason", reason),
        ("errored", "decision_errored", errored),
        ("error", "decision_error", error),
    ] {
        member(env, n, id, t(DECISION), vec![], f)?;
    }
    Ok(())
}
