//! The host block scheduler: the host fallback's model of one thread block,
//! the GPU threads of a block as stackful coroutines on one worker thread,
//! switched only where CUDA threads wait for each other (`sync_threads`,
//! warp collectives). Host pass only.
//!
//! | module | what |
//! | --- | --- |
//! | `block` | the scheduler: runs a block's threads, releases barriers and warps |
//! | `threads` | the plain loop over a block's threads that a runner executes, the kernel's body inlined |
//! | `phases` | a block of a kernel whose barriers are `.await`s: its threads' futures polled phase by phase |
//! | `awaits` | the warp collectives of such a kernel's body as `.await`s, met in its phases |
//! | `lockstep` | such a kernel's grid-stride loops, run one iteration of every thread at a time |
//! | `state` | the block state that the scheduler and the threads share, and the thread-locals that find it |
//! | `deadlock` | why a block whose threads all wait cannot proceed (divergence) |
//! | `entry` | what the device API calls on the host: `sync_threads`, warp collectives, shared memory |
//! | `collective` | the results of a warp collective from its lanes' inputs |
//! | `reduce` | warp reductions in one meeting of the warp, computed over the lanes' values |
//! | `arena` | a block's shared memory |
//! | `failure` | why a block did not complete |
//! | `stack` | the simulated threads' coroutine stacks, colored for the cache |
//! | `stack_guard` | a simulated GPU thread's stack overflow as an error of the launch |
//!
//! Who calls whom: the host backend (`runtime::host`) checks out an
//! [`Executor`](block::Executor) per worker and runs blocks on it; the
//! scheduler resumes runners, each of which runs the launch's body,
//! `__private::host_threads`, i.e. `threads`' loop over the kernel's body;
//! the device API (`device::shared`, `device::warp`, `device::atomic`,
//! `device::print`, `__private`) calls `entry`, `reduce` and
//! `stack_guard::check` from inside the simulated threads. `block`,
//! `threads`, `entry` and `reduce` share the block state (`state`);
//! `stack`, `stack_guard` and `failure` call nothing here.

pub(crate) mod arena;
pub(crate) mod awaits;
pub(crate) mod block;
pub(crate) mod collective;
mod deadlock;
pub(crate) mod entry;
pub(crate) mod lockstep;
pub(crate) mod failure;
pub(crate) mod phases;
pub(crate) mod reduce;
mod stack;
pub(crate) mod stack_guard;
mod state;
pub(crate) mod threads;
