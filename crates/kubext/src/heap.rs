//! The global allocator, wrapped to count the bytes it has handed out and not
//! yet taken back: `/metrics` reports them as `kubext_heap_live_bytes`, what
//! the server holds apart from what the allocator keeps for reuse (RSS moves
//! with that retention; benchmarks of memory per object read this instead).
//!
//! The count is kept per thread, not in one shared atomic: a create allocates
//! and frees a few hundred times on whichever worker runs it, and one counter
//! for all threads made its cache line travel between cores on every one of
//! them. Each of the first [`OWN_SLOTS`] threads owns a slot that only it
//! writes (a plain load and store); later threads (short-lived blocking-pool
//! threads) share one atomic. The total is the sum of the slots: memory freed
//! by another thread than the one that allocated it makes one slot negative
//! and another positive, and the sum stays right.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

#[cfg(feature = "mimalloc")]
type Inner = Mimalloc;
#[cfg(not(feature = "mimalloc"))]
type Inner = std::alloc::System;

/// mimalloc: the server allocates and frees many small JSON nodes from several
/// threads; glibc's allocator spent a third of a create in lock contention.
/// Without the `mimalloc` feature the system allocator (which heap profilers
/// such as heaptrack follow).
#[cfg(feature = "mimalloc")]
const INNER: Inner = Mimalloc;
#[cfg(not(feature = "mimalloc"))]
const INNER: Inner = std::alloc::System;

/// mimalloc called directly. Every block it hands out is 8-aligned, so most
/// allocations (alignment 1 to 8) take its plain `mi_malloc`; the `mimalloc`
/// crate calls `mi_malloc_aligned` for all of them, whose alignment checks
/// cost about as much again as the allocation's fast path.
#[cfg(feature = "mimalloc")]
struct Mimalloc;

#[cfg(feature = "mimalloc")]
impl Mimalloc {
    /// The alignment every mimalloc block has (its word size).
    const PLAIN_ALIGN: usize = 8;

    /// A new block from `plain` (size) or, for larger alignments, `aligned`
    /// (size, alignment).
    unsafe fn block(
        layout: Layout,
        plain: unsafe extern "C" fn(usize) -> *mut std::ffi::c_void,
        aligned: unsafe extern "C" fn(usize, usize) -> *mut std::ffi::c_void,
    ) -> *mut u8 {
        let block = if layout.align() <= Self::PLAIN_ALIGN {
            unsafe { plain(layout.size()) }
        } else {
            unsafe { aligned(layout.size(), layout.align()) }
        };
        block.cast()
    }
}

#[cfg(feature = "mimalloc")]
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_malloc, mi_malloc_aligned};
        unsafe { Self::block(layout, mi_malloc, mi_malloc_aligned) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};
        unsafe { Self::block(layout, mi_zalloc, mi_zalloc_aligned) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys::{mi_realloc, mi_realloc_aligned};
        let block = if layout.align() <= Self::PLAIN_ALIGN {
            unsafe { mi_realloc(ptr.cast(), new_size) }
        } else {
            unsafe { mi_realloc_aligned(ptr.cast(), new_size, layout.align()) }
        };
        block.cast()
    }
}

#[global_allocator]
static GLOBAL: Counted = Counted;

/// Threads that get a slot of their own (the runtime's workers come first).
const OWN_SLOTS: usize = 64;

/// A slot on a cache line of its own, so that threads do not share lines.
#[repr(align(128))]
struct Slot(AtomicIsize);

static SLOTS: [Slot; OWN_SLOTS] = [const { Slot(AtomicIsize::new(0)) }; OWN_SLOTS];
/// The slot of every thread that came after the first [`OWN_SLOTS`].
static SHARED: Slot = Slot(AtomicIsize::new(0));
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

const UNASSIGNED: usize = usize::MAX;

thread_local! {
    // A const initializer and no destructor: reading it never allocates and
    // works until the thread's very end, as an allocator needs.
    static MY_SLOT: Cell<usize> = const { Cell::new(UNASSIGNED) };
}

fn count(delta: isize) {
    let slot = MY_SLOT.with(|mine| {
        let mut slot = mine.get();
        if slot == UNASSIGNED {
            slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
            mine.set(slot);
        }
        slot
    });
    match SLOTS.get(slot) {
        // Only this thread writes its slot: no read-modify-write needed.
        Some(own) => own
            .0
            .store(own.0.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            SHARED.0.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

struct Counted;

// SAFETY: every call is passed on to `INNER` unchanged; only the count is added.
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let ptr = unsafe { INNER.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let ptr = unsafe { INNER.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees, passed on.
        unsafe { INNER.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let new = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

/// Heap bytes allocated and not yet freed.
pub fn live_bytes() -> u64 {
    let own: isize = SLOTS.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    (own + SHARED.0.load(Ordering::Relaxed)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What threads allocate and free, on their own or each other's, is
    /// counted once.
    #[test]
    #[cfg(feature = "mimalloc")]
    fn blocks_have_the_alignment_asked_for() {
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1, 7, 8, 16, 24, 40, 100, 1000, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let aligned = |p: *mut u8| !p.is_null() && (p as usize).is_multiple_of(align);
                unsafe {
                    let p = INNER.alloc(layout);
                    assert!(aligned(p), "{size} {align}");
                    p.write_bytes(7, size);
                    let q = INNER.realloc(p, layout, size * 3);
                    assert!(aligned(q), "realloc {size} {align}");
                    assert!((0..size).all(|i| *q.add(i) == 7));
                    INNER.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = INNER.alloc_zeroed(layout);
                    assert!(aligned(z), "zeroed {size} {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    INNER.dealloc(z, layout);
                }
            }
        }
    }

    #[test]
    fn live_bytes_follow_allocations_across_threads() {
        const SIZE: usize = 1 << 24;
        let before = live_bytes();
        let block = vec![1u8; SIZE];
        assert!(live_bytes() >= before + SIZE as u64 - (1 << 20));
        // Freed on another thread than the one that allocated it.
        std::thread::spawn(move || drop(block)).join().unwrap();
        let blocks: Vec<Vec<u8>> = (0..4)
            .map(|_| std::thread::spawn(|| vec![2u8; SIZE]).join().unwrap())
            .collect();
        let held = live_bytes();
        assert!(
            held >= before + 4 * SIZE as u64 - (1 << 20),
            "{held} {before}"
        );
        drop(blocks);
        let after = live_bytes();
        assert!(after < before + (1 << 20), "{after} {before}");
    }
}
