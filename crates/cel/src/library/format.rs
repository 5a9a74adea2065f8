//! Kubernetes' format library (`library.Format`): the named formats of
//! `format.named(name)` and `format.<name>()`, and
//! `<NamedFormat>.validate(s)`, `optional.none()` when `s` is valid, the
//! list of upstream's messages otherwise.

use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Value;
use cel::{DeclarationError, Env, ExecutionError};

use super::{Args, Ret, global, member, opaque_arg, opaque_type, string_arg, urls};

const NAMED_FORMAT: &str = "kubernetes.NamedFormat";

pub(crate) const DECLARATIONS: &[&str] = &[
    "format.named(string) -> optional(kubernetes.NamedFormat)",
    "[kubernetes.NamedFormat].validate(string) -> optional(list(string))",
    "format.dns1123Label() -> kubernetes.NamedFormat",
    "format.dns1123Subdomain() -> kubernetes.NamedFormat",
    "format.dns1035Label() -> kubernetes.NamedFormat",
    "format.qualifiedName() -> kubernetes.NamedFormat",
    "format.dns1123LabelPrefix() -> kubernetes.NamedFormat",
    "format.dns1123SubdomainPrefix() -> kubernetes.NamedFormat",
    "format.dns1035LabelPrefix() -> kubernetes.NamedFormat",
    "format.labelValue() -> kubernetes.NamedFormat",
    "format.uri() -> kubernetes.NamedFormat",
    "format.uuid() -> kubernetes.NamedFormat",
    "format.byte() -> kubernetes.NamedFormat",
    "format.date() -> kubernetes.NamedFormat",
    "format.datetime() -> kubernetes.NamedFormat",
];

/// The named formats, by the name `format.named` takes.
const FORMATS: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    global(
        env,
        "format.named",
        "format-named",
        vec![STRING_TYPE],
        named,
    )?;
    member(
        env,
        "validate",
        "format-validate",
        opaque_type(NAMED_FORMAT),
        vec![STRING_TYPE],
        validate,
    )?;
    // One zero-argument function per format: a function pointer can't carry
    // the name, so each is its own item.
    macro_rules! constant {
        ($($name:literal => $f:ident),* $(,)?) => {
            $(
                fn $f<'b, 'v>(_: Args<'b, 'v>) -> Ret<'b, 'v> {
                    format_value($name)
                }
                global(env, concat!("format.", $name), concat!("format.", $name), vec![], $f)?;
            )*
        };
    }
    constant! {
        "dns1123Label" => dns1123_label,
        "dns1123Subdomain" => dns1123_subdomain,
        "dns1035Label" => dns1035_label,
        "qualifiedName" => qualified_name,
        "dns1123LabelPrefix" => dns1123_label_prefix,
        "dns1123SubdomainPrefix" => dns1123_subdomain_prefix,
        "dns1035LabelPrefix" => dns1035_label_prefix,
        "labelValue" => label_value,
        "uri" => uri,
        "uuid" => uuid,
        "byte" => byte,
        "date" => date,
        "datetime" => datetime,
    }
    Ok(())
}

/// A `kubernetes.NamedFormat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedFormat(&'static str);

impl cel::objects::Opaque for NamedFormat {
    fn runtime_type_name(&self) -> &str {
        NAMED_FORMAT
    }
}

fn boxed(name: &'static str) -> Result<Box<dyn Val>, ExecutionError> {
    Box::<dyn Val>::try_from(Value::Opaque(std::sync::Arc::new(NamedFormat(name))))
}

fn format_value<'b, 'v>(name: &'static str) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(boxed(name)?))
}

fn named<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let name = string_arg(&args, 0)?;
    Ok(CowVal::owned(match FORMATS.iter().find(|f| **f == name) {
        Some(f) => CelOptional::of(boxed(f)?),
        None => CelOptional::none(),
    }))
}

/// The messages of `name`'s validation of `s`; none when valid.
fn check(name: &str, s: &str) -> Vec<String> {
    use apimachinery::validation as v;
    let strfmt = |format: &str, message: &str| {
        if schema::formats::check_format(format, s) {
            Vec::new()
        } else {
            vec![message.to_owned()]
        }
    };
    match name {
        "dns1123Label" => v::name_is_dns_label(s, false),
        "dns1123Subdomain" => v::name_is_dns_subdomain(s, false),
        "dns1035Label" => v::name_is_dns1035_label(s, false),
        "qualifiedName" => v::is_qualified_name(s),
        "dns1123LabelPrefix" => v::name_is_dns_label(s, true),
        "dns1123SubdomainPrefix" => v::name_is_dns_subdomain(s, true),
        "dns1035LabelPrefix" => v::name_is_dns1035_label(s, true),
        "labelValue" => v::is_valid_label_value(s),
        "uri" => urls::parse_request_uri(s).err().into_iter().collect(),
        "uuid" => strfmt("uuid", "does not match the UUID format"),
        "byte" => strfmt("byte", "invalid base64"),
        "date" => strfmt("date", "invalid date"),
        "datetime" => strfmt("datetime", "invalid datetime"),
        _ => Vec::new(),
    }
}

fn validate<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let format = opaque_arg::<NamedFormat>(&args, 0, NAMED_FORMAT)?;
    let errors = check(format.0, string_arg(&args, 1)?);
    if errors.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let list: Vec<Box<dyn Val + 'v>> = errors
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        list,
    )))))
}
