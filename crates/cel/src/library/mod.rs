//! Kubernetes' CEL libraries on the `cel` crate (1.33's base environment):
//! runtime functions registered on the `Env`, and their declarations for the
//! type checker.

use cel::Env;

/// Register every Kubernetes library function on `env`.
pub fn register(env: &mut Env) {
    let _ = env;
}

/// The declarations of the functions `register` adds, in the checker's
/// notation (see `crate::decls`).
pub fn declarations() -> impl Iterator<Item = &'static str> {
    std::iter::empty()
}
