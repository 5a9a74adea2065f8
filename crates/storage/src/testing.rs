//! What the storage crate's own tests share: a small repeatable random
//! source and keys shaped like the registry's.

/// Numbers below `n` from a xorshift generator seeded with `seed`: the same
/// sequence on every run.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// A storage key for `i`: long shared prefixes, a few namespaces, names of
/// varied lengths.
pub(crate) fn registry_key(i: u64) -> String {
    format!("/registry/configmaps/ns-{}/obj-{}", i % 3, i * 7 % 101)
}
