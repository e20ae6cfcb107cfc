//! The shared memory of the block a worker runs: a bump allocator over
//! chunks that are never freed (reused by later blocks and launches), so the
//! `&'static` references that `shared_array!` hands out stay valid memory for
//! the life of the process.

use std::sync::Mutex;
use std::vec::Vec;

/// Bump allocator for one block's shared memory. Chunks are leaked on
/// purpose (see the module docs) and reused.
pub(crate) struct Arena {
    pub(super) chunks: Vec<(*mut u8, usize)>,
    pub(super) chunk: usize,
    pub(super) offset: usize,
    pub(super) sites: Vec<(usize, *mut u8, usize)>,
    pub(super) dynamic: (*mut u8, usize),
    /// Bytes of the `sites` (static shared memory) of the current block.
    pub(super) static_bytes: usize,
}

// SAFETY: the arena only hands out pointers into leaked chunks; it is used
// by one worker at a time (checked out of `ARENAS` under its mutex).
unsafe impl Send for Arena {}

static ARENAS: Mutex<Vec<Arena>> = Mutex::new(Vec::new());

impl Arena {
    /// An arena with no memory.
    pub(super) const fn empty() -> Arena {
        Arena {
            chunks: Vec::new(),
            chunk: 0,
            offset: 0,
            sites: Vec::new(),
            dynamic: (core::ptr::null_mut(), 0),
            static_bytes: 0,
        }
    }

    /// An arena from the pool, or a new one.
    pub(super) fn checkout() -> Arena {
        ARENAS.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or(Arena::empty())
    }

    /// Returns the arena (and its chunks) to the pool.
    pub(super) fn give_back(self) {
        ARENAS.lock().unwrap_or_else(|e| e.into_inner()).push(self);
    }

    pub(super) fn reset(&mut self) {
        self.chunk = 0;
        self.offset = 0;
        self.sites.clear();
        self.dynamic = (core::ptr::null_mut(), 0);
        self.static_bytes = 0;
    }

    /// The address range `[lo, hi)` of the first chunk (empty if none):
    /// where a block's shared memory lives unless it needs more than a
    /// chunk.
    pub(super) fn first_chunk(&self) -> (usize, usize) {
        self.chunks.first().map_or((0, 0), |&(p, cap)| (p as usize, p as usize + cap))
    }

    pub(super) fn alloc(&mut self, size: usize, align: usize) -> *mut u8 {
        let align = align.max(16);
        loop {
            if let Some(&(base, cap)) = self.chunks.get(self.chunk) {
                let start = (base as usize + self.offset).next_multiple_of(align) - base as usize;
                if start + size <= cap {
                    self.offset = start + size;
                    // SAFETY: `start + size <= cap`, inside the chunk.
                    return unsafe { base.add(start) };
                }
                self.chunk += 1;
                self.offset = 0;
                continue;
            }
            let cap = (size + align).max(64 * 1024);
            let layout = std::alloc::Layout::from_size_align(cap, 16).expect("shared-memory chunk layout");
            // SAFETY: `cap > 0`.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            self.chunks.push((p, cap));
        }
    }
}
