//! Why a block of the host fallback did not complete: what the scheduler
//! (`block`) returns, the payload with which the runtime itself stops a
//! simulated GPU thread (`entry`, `stack_guard`), and what the panic hook
//! (`runtime::host`) saw of a kernel's panic.

use core::cell::RefCell;
use std::string::String;

use crate::device::dim::Dim3;

/// Why a block did not complete.
pub(crate) enum BlockFailure {
    /// A thread panicked (the block's first to panic: the others ran to
    /// their end). `thread` is `threadIdx` of the panicking thread, `record`
    /// what the panic hook saw (`None` if it saw nothing).
    Panic { thread: Dim3, record: Option<PanicRecord> },
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

/// The payload with which the phases of a block (`phases`, `awaits`) stop
/// it when its warp collectives cannot meet: the reason, as
/// [`BlockFailure::Divergence`] gives it.
pub(crate) struct Divergent(pub(crate) String);

/// What the panic hook saw for a panic inside a kernel body.
pub(crate) struct PanicRecord {
    pub(crate) message: String,
    /// `file:line:col`.
    pub(crate) location: String,
}

std::thread_local! {
    /// The last panic the hook saw on this OS thread, until the scheduler
    /// takes it as it catches the panic.
    static LAST_PANIC: RefCell<Option<PanicRecord>> = const { RefCell::new(None) };
}

/// Keeps what the panic hook saw of the panic this OS thread is raising.
pub(crate) fn record_panic(record: PanicRecord) {
    LAST_PANIC.with(|p| *p.borrow_mut() = Some(record));
}

/// What the panic hook saw of the panic this OS thread just caught.
pub(crate) fn take_panic() -> Option<PanicRecord> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}
