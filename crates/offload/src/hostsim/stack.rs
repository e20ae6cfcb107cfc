//! The coroutine stacks of simulated GPU threads: corosensei's
//! `DefaultStack` (`mmap`ed, a guard page below), each started at a
//! different offset within its first page ("coloring").
//!
//! Without it every stack starts at the same offset of a page, so the top
//! frames of all coroutines, which each switch touches, fall into the same
//! few sets of the L1 data cache and evict each other: switching round a
//! block of 256 threads measured 2× slower than with colored stacks here
//! (corosensei resume + suspend, 33 against 14 ns).

use corosensei::stack::{DefaultStack, Stack, StackPointer};

/// Distinct starting offsets: one per cache line of a 4 KiB page.
const COLORS: usize = 64;
/// Bytes between two colors: a cache line.
const LINE: usize = 64;

/// A coroutine stack whose top is `color · 64` bytes below the mapping's.
pub(crate) struct ThreadStack {
    stack: DefaultStack,
    offset: usize,
}

impl ThreadStack {
    /// A new stack of `size` usable bytes (less the offset), the `k`-th of
    /// its executor (which picks its color).
    pub(crate) fn new(size: usize, k: usize) -> std::io::Result<ThreadStack> {
        Ok(ThreadStack { stack: DefaultStack::new(size)?, offset: (k % COLORS) * LINE })
    }
}

// SAFETY: `base` is the inner stack's base lowered by a multiple of 64
// (so still 16-byte aligned) of at most 4032 bytes, far less than the
// stacks' minimum of 64 KiB (`runtime::host::MIN_STACK_KIB`), so the usable
// memory stays above `MIN_STACK_SIZE`; `limit` and the guard page are the
// inner stack's.
unsafe impl Stack for ThreadStack {
    #[inline]
    fn base(&self) -> StackPointer {
        StackPointer::new(self.stack.base().get() - self.offset).expect("a stack base is not null")
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        self.stack.limit()
    }

    #[cfg(windows)]
    #[inline]
    fn teb_fields(&self) -> corosensei::stack::StackTebFields {
        self.stack.teb_fields()
    }

    #[cfg(windows)]
    #[inline]
    fn update_teb_fields(&mut self, stack_limit: usize, guaranteed_stack_bytes: usize) {
        self.stack.update_teb_fields(stack_limit, guaranteed_stack_bytes)
    }
}
