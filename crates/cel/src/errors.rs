//! Runtime errors in cel-go's words. Rule and policy failures quote the
//! evaluation error (`no such key: x evaluating rule: …`), so the `cel` crate's
//! texts are rewritten as cel-go writes them, and a logical operator whose two
//! operands both fail reports the one cel-go's `evalOr`/`evalAnd` keep: the left.

use cel::common::ast::{Expr, operators};
use cel::objects::Value as CelValue;
use cel::{Context, ExecutionError, IdedExpr, Program};

/// The text of `err`, raised by evaluating `program` in `ctx`, as cel-go reports it.
pub fn runtime_error(program: &Program, ctx: &Context, err: ExecutionError) -> String {
    let err = left_operand_error(program.expression(), ctx).unwrap_or(err);
    go_text(&err)
}

/// In `a || b` and `a && b` where neither side decides the result, the `cel`
/// crate returns the right operand's error; cel-go the left one's. Only called
/// after an evaluation failed: it evaluates the operands again.
fn left_operand_error(expr: &IdedExpr, ctx: &Context) -> Option<ExecutionError> {
    let Expr::Call(call) = &expr.expr else {
        return None;
    };
    let logical =
        call.func_name == operators::LOGICAL_OR || call.func_name == operators::LOGICAL_AND;
    let [left, right] = call.args.as_slice() else {
        return None;
    };
    if !logical || call.target.is_some() {
        return None;
    }
    match CelValue::resolve(left, ctx) {
        Err(e) => Some(left_operand_error(left, ctx).unwrap_or(e)),
        Ok(_) => left_operand_error(right, ctx),
    }
}

fn go_text(err: &ExecutionError) -> String {
    match err {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        // The libraries' errors carry upstream's texts.
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn error_of(source: &str) -> String {
        let program = Program::compile(source).unwrap();
        let mut ctx = Context::default();
        let object: HashMap<String, i64> = HashMap::from([("present".to_string(), 1)]);
        ctx.add_variable("self", object).unwrap();
        let err = program.execute(&ctx).unwrap_err();
        runtime_error(&program, &ctx, err)
    }

    /// cel-go's texts, and its `evalOr`/`evalAnd` keeping the left operand's error.
    #[test]
    fn reads_as_cel_go() {
        assert_eq!(error_of("self.missing == 1"), "no such key: missing");
        assert_eq!(error_of("self.a == 1 || self.b == 1"), "no such key: a");
        assert_eq!(error_of("self.a == 1 && self.b == 1"), "no such key: a");
        assert_eq!(
            error_of("(self.a == 1 || self.b == 1) || self.c == 1"),
            "no such key: a"
        );
        assert_eq!(
            error_of("self.present == 2 || self.b == 1"),
            "no such key: b"
        );
        assert_eq!(error_of("self.present / 0 == 1"), "division by zero");
        assert_eq!(error_of("self.present % 0 == 1"), "modulus by zero");
    }
}
