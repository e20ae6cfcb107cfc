//! Why a block of the host fallback did not complete: what the scheduler
//! (`block`) returns and the payload with which the runtime itself stops a
//! simulated GPU thread (`entry`, `stack_guard`).

use std::string::String;

use crate::device::dim::Dim3;

/// Why a block did not complete.
pub(crate) enum BlockFailure {
    /// A thread panicked; the panic hook recorded the message. `thread` is
    /// `threadIdx` of the panicking thread.
    Panic { thread: Dim3 },
    /// No thread can make progress (barrier or warp collective in divergent
    /// code); the text says who waits where.
    Divergence { reason: String },
    /// The system could not allocate a simulated thread's stack (`mmap` or
    /// `mprotect` failed: address space or memory); the OS error.
    NoStack { error: String },
    /// The runtime stopped thread `thread` (`threadIdx`) (see [`Abort`]).
    Aborted { abort: Abort, thread: Dim3 },
}

/// Why the runtime itself stopped a simulated GPU thread (it is no panic of
/// the kernel's code): the payload of a `resume_unwind` (which runs no
/// panic hook) that the block's scheduler catches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Abort {
    /// The block's static shared memory (`shared_array!`s, counted as they
    /// are first used) and its dynamic shared memory exceed the limit.
    SharedMemory { static_bytes: u32, dynamic: u32 },
    /// The thread's coroutine stack is exhausted (see `stack_guard`).
    StackOverflow,
}
