//! Typed object construction, for mutating admission policies: apply
//! configurations (`Object{spec: Object.spec{replicas: 3}}`) and JSON patches
//! (`JSONPatch{op: 'add', path: '/spec/x', value: 1}`). Each named type is
//! registered in an environment of the policy's own and builds a map; the
//! result becomes JSON with [`crate::Evaluated::to_json`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{CelMap, CelMapKey, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError, StructType};

/// An object type whose values are maps of their fields.
struct ObjectType {
    t: Type,
}

impl StructType for ObjectType {
    fn get_type(&self) -> &Type {
        &self.t
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let map: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = fields
            .into_iter()
            .map(|(k, v)| (CelMapKey::from(k), v.into_owned()))
            .collect();
        Ok(Box::new(CelMap::from(map)))
    }
}

/// Whether `name` is a type mutations may construct.
pub(crate) fn is_object_type(name: &str) -> bool {
    name == "JSONPatch" || name == "Object" || name.starts_with("Object.")
}

/// An environment where the object types some expressions construct exist.
#[derive(Clone)]
pub struct ObjectTypes {
    pub(crate) env: Arc<Env>,
}

impl ObjectTypes {
    /// The environment for these expressions (sources that do not parse are
    /// skipped: compiling them reports why).
    pub fn for_expressions(sources: &[&str]) -> ObjectTypes {
        let base = crate::environment();
        let mut names = BTreeSet::from(["JSONPatch".to_string()]);
        for source in sources {
            if let Ok(program) = base.compile(source) {
                collect(program.expression(), &mut names);
            }
        }
        let mut env = crate::build_environment();
        for name in names {
            // Only fails for a name registered twice, which a set prevents.
            let _ = env.add_type(ObjectType {
                t: Type::new_opaque_type(name),
            });
        }
        ObjectTypes { env: Arc::new(env) }
    }
}

fn collect(e: &IdedExpr, names: &mut BTreeSet<String>) {
    match &e.expr {
        Expr::Struct(s) => {
            if is_object_type(&s.type_name) {
                names.insert(s.type_name.clone());
            }
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    collect(&f.value, names);
                }
            }
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                collect(t, names);
            }
            c.args.iter().for_each(|a| collect(a, names));
        }
        Expr::List(l) => l.elements.iter().for_each(|a| collect(a, names)),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    collect(&e.key, names);
                    collect(&e.value, names);
                }
            }
        }
        Expr::Select(s) => collect(&s.operand, names),
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                collect(part, names);
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bindings, Expected, Expression};
    use serde_json::json;

    fn evaluate(source: &str) -> serde_json::Value {
        let types = ObjectTypes::for_expressions(&[source]);
        let e = Expression::compile(source, &["object"], Expected::Any).unwrap();
        let object = json!({"spec": {"replicas": 1}});
        let mut b = Bindings::with_object_types(&types);
        b.bind("object", Some(&object));
        e.evaluate(&b).unwrap().to_json().unwrap()
    }

    #[test]
    fn apply_configurations_and_patches_become_json() {
        assert_eq!(
            evaluate("Object{spec: Object.spec{replicas: object.spec.replicas + 2}}"),
            json!({"spec": {"replicas": 3}})
        );
        assert_eq!(
            evaluate("[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]"),
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
        );
        let err = Expression::compile("Deployment{}", &["object"], Expected::Any)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("undeclared reference to 'Deployment'"),
            "{err}"
        );
    }
}
