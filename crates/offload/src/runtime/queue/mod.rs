//! Asynchronous execution: [`Queue`]s (CUDA streams; worker threads on the
//! host fallback), [`Event`]s, queued launches (`kernel::on`), scopes for
//! borrowed host memory, graphs and futures. The user's contract is
//! `docs/async.md`; this module is its generic half, the backends' halves
//! are `runtime::host_queue` and `runtime::cuda::queue`.
//!
//! Every operation enqueued on a queue gets the next *sequence number* of
//! that queue (1, 2, …); "`(q, n)` is complete" means every operation of
//! `q` up to `n` has finished. Buffers remember their pending work as such
//! pairs (see `track`), so a launch on one queue that needs work of
//! another waits for it on the device, and host access waits on the host.

//!
//! | module | what |
//! | --- | --- |
//! | `progress` | how far a queue's work has come, and its pending error |
//! | `inner` | a queue's shared state and how one queue waits for another's work |
//! | `track` | buffers' pending work, as `(queue, sequence number)` pairs |
//! | `capture` | what a capture in progress collects; what it refuses; the replay lock |
//! | `handle`, `event` | [`Queue`], [`Event`] |
//! | `copy`, `scope` | queued copies; scopes of borrowed host memory |
//! | `graph` | [`Capture`], [`Graph`] |
//! | `enqueue` | queued launches |
//! | `future`, `interop` | futures ([`Wait`]); other libraries' work on a queue |
//!
//! Each row uses only rows above it (and the backends' halves): the
//! queue's state sits below the buffers whose pending work names it, and
//! the captures, which hold buffers, above both.

pub(crate) mod capture;
pub(crate) mod copy;
pub(crate) mod enqueue;
mod event;
mod future;
pub(crate) mod graph;
mod handle;
pub(crate) mod inner;
mod interop;
pub(crate) mod progress;
pub(crate) mod scope;
pub(crate) mod track;

pub use enqueue::{Enqueue, QueueSliceArg, QueueSliceArgMut};
pub use event::Event;
pub use future::Wait;
pub use graph::{Capture, Graph};
pub use handle::Queue;
pub(crate) use inner::{wait_queues, Imp, QueueInner};
pub use interop::{cu_context, BufferUse};
pub use scope::{scope, Scope};
