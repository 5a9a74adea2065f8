//! Free-standing CEL expressions over JSON values: what admission policies
//! (validations, matchConditions, variables, audit annotations, message
//! expressions) and webhook match conditions are made of. Compiled and
//! type-checked once, with their variables declared dyn (`variables` a map of
//! the policy's variables), evaluated per request.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map, Value as CelValue};
use cel::{Context, Program};
use serde_json::Value;

use crate::types::Type;

/// A compiled expression.
pub struct Expression {
    program: Program,
    /// The type the checker worked out (`dyn` when it depends on data).
    result: Type,
}

/// Why an expression does not compile: upstream's detail, which callers put in
/// a field error (`spec.validations[0].expression: Invalid value: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// cel-go's parse or check issues (`ERROR: <input>:1:3: …`).
    #[error("compilation failed: {0}")]
    Issues(String),
    /// The checked result type is not what the field needs.
    #[error("must evaluate to {}", if *.0 == Expected::Bool { "bool" } else { "string" })]
    ResultType(Expected),
}

/// Why an evaluation failed, in cel-go's words (`no such key: x`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvaluationError(pub String);

/// cel-go's issues with an expression checked against a resource's schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypeCheckIssues(pub String);

/// What an expression must evaluate to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    Bool,
    String,
    Any,
}

impl Expression {
    /// Compiles `source` with `variables` in scope (each dyn; `variables`
    /// itself a map), checking the result can be `expected`. The error is
    /// upstream's detail: `compilation failed: ERROR: <input>:…`, or `must
    /// evaluate to bool`.
    pub fn compile(
        source: &str,
        variables: &[&str],
        expected: Expected,
    ) -> Result<Expression, CompileError> {
        Expression::compile_with(source, variables, expected, crate::new_declarations())
    }

    /// As [`Expression::compile`], for an expression already stored: it may
    /// use everything the serving environment has (1.37's: the lists
    /// library's `includes`).
    pub fn compile_stored(
        source: &str,
        variables: &[&str],
        expected: Expected,
    ) -> Result<Expression, CompileError> {
        Expression::compile_with(source, variables, expected, crate::declarations())
    }

    fn compile_with(
        source: &str,
        variables: &[&str],
        expected: Expected,
        decls: &crate::decls::Declarations,
    ) -> Result<Expression, CompileError> {
        let env = crate::environment();
        let program = env
            .compile(source)
            .map_err(|e| CompileError::Issues(crate::check::parse_errors(&e, source)))?;
        let declared: Vec<(&str, Type)> = variables
            .iter()
            .map(|v| {
                let t = match *v {
                    "variables" => Type::map(Type::String, Type::Dyn),
                    "authorizer" => Type::Opaque("kubernetes.authorization.Authorizer".into()),
                    _ => Type::Dyn,
                };
                (*v, t)
            })
            .collect();
        let checked = crate::check::check(
            program.expression(),
            program.source_info(),
            &declared,
            decls,
        )
        .map_err(|issues| CompileError::Issues(issues.to_string()))?;
        let fits = match (expected, &checked.result) {
            (Expected::Any, _) | (_, Type::Dyn) => true,
            (Expected::Bool, t) => *t == Type::Bool,
            (Expected::String, t) => *t == Type::String,
        };
        if !fits {
            return Err(CompileError::ResultType(expected));
        }
        Ok(Expression {
            program,
            result: checked.result,
        })
    }

    /// Evaluates with `bindings`; the error is the evaluation's message.
    pub fn evaluate(&self, bindings: &Bindings<'_, '_>) -> Result<Evaluated, EvaluationError> {
        self.program
            .execute(&bindings.context)
            .map(Evaluated)
            .map_err(|e| {
                EvaluationError(crate::errors::runtime_error(
                    &self.program,
                    &bindings.context,
                    e,
                ))
            })
    }

    /// Checks `source` again with `object` and `oldObject` typed by a
    /// resource's schema (the others as in [`Expression::compile`]): cel-go's
    /// issues when the expression names what that resource lacks
    /// (a policy's `status.typeChecking`).
    pub fn check_against(
        source: &str,
        variables: &[&str],
        object: &schema::structural::Structural,
    ) -> Result<(), TypeCheckIssues> {
        // Upstream words these as the checker's issues, without the
        // `compilation failed: ` prefix.
        let Some(object_type) = Type::of_resource(object) else {
            return Ok(());
        };
        let env = crate::environment();
        let program = env
            .compile(source)
            .map_err(|e| TypeCheckIssues(crate::check::parse_errors(&e, source)))?;
        let declared: Vec<(&str, Type)> = variables
            .iter()
            .map(|v| {
                let t = match *v {
                    "object" | "oldObject" => object_type.clone(),
                    "variables" => Type::map(Type::String, Type::Dyn),
                    "authorizer" => Type::Opaque("kubernetes.authorization.Authorizer".into()),
                    _ => Type::Dyn,
                };
                (*v, t)
            })
            .collect();
        crate::check::check(
            program.expression(),
            program.source_info(),
            &declared,
            crate::declarations(),
        )
        .map(|_| ())
        .map_err(|issues| TypeCheckIssues(issues.to_string()))
    }

    /// Whether the checker could tell the type (not `dyn`).
    pub fn is_typed(&self) -> bool {
        self.result != Type::Dyn
    }
}

/// A value an expression produced.
#[derive(Debug, Clone)]
pub struct Evaluated(CelValue);

impl Evaluated {
    pub fn as_bool(&self) -> Option<bool> {
        match self.0 {
            CelValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            CelValue::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.0, CelValue::Null)
    }

    /// As JSON: maps (and constructed objects) as objects, lists as arrays;
    /// `None` for what JSON cannot hold (bytes, durations, opaque values).
    pub fn to_json(&self) -> Option<Value> {
        to_json(&self.0)
    }

    /// The CEL type name, for messages (`int`, `string`).
    pub fn type_name(&self) -> String {
        self.0.type_of().to_string()
    }
}

fn to_json(v: &CelValue) -> Option<Value> {
    Some(match v {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::List(items) => Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        CelValue::Map(m) => {
            let mut object = serde_json::Map::new();
            for (k, v) in m.map.iter() {
                let Key::String(k) = k else {
                    return None;
                };
                object.insert(k.to_string(), to_json(v)?);
            }
            Value::Object(object)
        }
        CelValue::Timestamp(t) => Value::String(t.to_rfc3339()),
        _ => return None,
    })
}

/// The variables of evaluations: converted once, shared by every expression
/// evaluated with them; a [`Bindings::child`] adds more for some of them
/// (one parameter's) without converting the rest again.
pub struct Bindings<'p, 'v> {
    context: Context<'p, 'v>,
    variables: HashMap<Key, CelValue>,
}

impl<'v> Default for Bindings<'v, 'v> {
    fn default() -> Self {
        Bindings {
            context: Context::with_env(crate::environment()),
            variables: HashMap::new(),
        }
    }
}

impl<'v> Bindings<'v, 'v> {
    /// Bindings whose evaluations may construct these object types.
    pub fn with_object_types(types: &crate::ObjectTypes) -> Self {
        Bindings {
            context: Context::with_env(types.env.clone()),
            variables: HashMap::new(),
        }
    }
}

impl<'p, 'v> Bindings<'p, 'v> {
    /// Bindings that see these and may add their own.
    pub fn child(&self) -> Bindings<'_, 'v> {
        Bindings {
            context: self.context.new_inner_scope(),
            variables: HashMap::new(),
        }
    }

    /// Binds `name` to a JSON value (`null` when absent), borrowing it.
    pub fn bind(&mut self, name: &str, value: Option<&'v Value>) {
        match value {
            Some(v) => self
                .context
                .add_variable_as_val(name, crate::values::to_val(v, None, false)),
            None => self.context.add_variable_from_value(name, CelValue::Null),
        }
    }

    /// Binds `name` to an authorizer answering for the requesting user.
    pub fn bind_authorizer(
        &mut self,
        name: &str,
        authorize: Arc<dyn crate::library::authz::Authorize>,
    ) {
        self.context
            .add_variable_from_value(name, crate::library::authz::authorizer(authorize));
    }

    /// Adds `variables.<name>`.
    pub fn bind_variable(&mut self, name: &str, value: Evaluated) {
        self.variables
            .insert(Key::String(Arc::new(name.to_string())), value.0);
        let map = CelValue::Map(Map {
            map: Arc::new(self.variables.clone()),
        });
        self.context.add_variable_from_value("variables", map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VARIABLES: &[&str] = &["object", "oldObject", "params", "request", "variables"];

    #[test]
    fn policy_expressions_compile_check_and_evaluate() {
        let e =
            Expression::compile("object.spec.replicas <= 5", VARIABLES, Expected::Bool).unwrap();
        let object = json!({"spec": {"replicas": 7}});
        let mut b = Bindings::default();
        b.bind("object", Some(&object));
        assert_eq!(e.evaluate(&b).unwrap().as_bool(), Some(false));

        let err = Expression::compile("object.x in [1, 2, ", VARIABLES, Expected::Bool)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with(
                "compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>'"
            ),
            "{err}"
        );
        let err = Expression::compile("objects.x == 1", VARIABLES, Expected::Bool)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("undeclared reference to 'objects'"), "{err}");
        let err = Expression::compile("'a'", VARIABLES, Expected::Bool)
            .err()
            .unwrap();
        assert_eq!(err, CompileError::ResultType(Expected::Bool));
        assert_eq!(err.to_string(), "must evaluate to bool");

        let v =
            Expression::compile("object.metadata.name + '!'", VARIABLES, Expected::Any).unwrap();
        let object = json!({"metadata": {"name": "n"}});
        let mut b = Bindings::default();
        b.bind("object", Some(&object));
        b.bind_variable("shout", v.evaluate(&b).unwrap());
        let uses =
            Expression::compile("variables.shout == 'n!'", VARIABLES, Expected::Bool).unwrap();
        assert_eq!(uses.evaluate(&b).unwrap().as_bool(), Some(true));
    }
}
