//! The global allocator, wrapped to count the bytes it has handed out and not
//! yet taken back: `/metrics` reports them as `kubext_heap_live_bytes`, what
//! the server holds apart from what the allocator keeps for reuse (RSS moves
//! with that retention; benchmarks of memory per object read this instead).

#[cfg(feature = "mimalloc")]
type Inner = mimalloc::MiMalloc;
#[cfg(not(feature = "mimalloc"))]
type Inner = std::alloc::System;

/// mimalloc: the server allocates and frees many small JSON nodes from several
/// threads; glibc's allocator spent a third of a create in lock contention.
/// Without the `mimalloc` feature the system allocator (which heap profilers
/// such as heaptrack follow).
#[cfg(feature = "mimalloc")]
const INNER: Inner = mimalloc::MiMalloc;
#[cfg(not(feature = "mimalloc"))]
const INNER: Inner = std::alloc::System;

#[global_allocator]
static GLOBAL: cap::Cap<Inner> = cap::Cap::new(INNER, usize::MAX);

/// Heap bytes allocated and not yet freed.
pub fn live_bytes() -> u64 {
    GLOBAL.allocated() as u64
}
