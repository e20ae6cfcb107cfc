//! The CUDA backend's queues: one non-blocking stream per
//! [`Queue`](crate::Queue) (`cuStreamCreate(CU_STREAM_NON_BLOCKING)`), in
//! the primary context the blocking path uses.
//!
//! - Launches: `cuLaunchKernel` in the stream, parameters built as the
//!   blocking path builds them (the driver copies them at the call, CUDA
//!   Driver API, `cuLaunchKernel`), with no wait.
//! - Fences: where another queue or the host must wait for the queue's
//!   work up to sequence number `n`, an event (`CU_EVENT_DISABLE_TIMING`) is
//!   recorded *now*: it completes after operation `n` and possibly later
//!   ones, so waits are never too short. It is labelled `n` (what it is
//!   known to cover) and reused for every `m <= n`.
//! - Errors: the device records a panic in the context's one panic record
//!   (see `panic_record`); after a wait, the record is read and the panic
//!   reported on the queue whose unchecked kernel contains its location,
//!   naming that kernel; a panic outside every kernel's lines names the
//!   kernels launched since the last check as candidates (`attrib`). A
//!   sticky fault (`CUDA_ERROR_ILLEGAL_ADDRESS`, a trap) is reported with
//!   those candidates and the context rebuilt, as the blocking path does;
//!   streams, fences and allocations of the old context are then
//!   forgotten, never used.
//!
//! | module | what |
//! | --- | --- |
//! | this one | [`CudaQueue`]: its stream, fences and waits, error attribution |
//! | `attrib` | which queue a panic record belongs to ([`attrib::Unchecked`]) |
//! | `launch` | launches in the stream, with a scope's copies of host memory |
//! | `event` | [`Fence`], [`TimedEvent`], [`elapsed_ms`], the context generation |
//! | `copy` | copies in the stream |
//! | `scope` | a scope's device copies of borrowed host memory ([`ScopeCopies`]) |
//! | `graph` | stream capture and graph replay ([`graph::CudaGraph`]) |
//!
//! Who calls whom: `launch`, `copy` and `graph` add methods to
//! [`CudaQueue`]; `launch` uses `scope`; this module uses `attrib` and
//! `event`; `attrib`, `event` and `scope` use none of them. Nothing here
//! uses the generic queue (`runtime::queue`) but its `Progress` and, in
//! `copy`, the description of a copy. The queue itself (this module) knows nothing of a launch's
//! arguments (`runtime::spec`): the generic queue, which those name, sits
//! on it.

pub(crate) mod attrib;
pub(crate) mod copy;
mod event;
pub(crate) mod graph;
mod launch;
pub(crate) mod scope;

use core::ffi::c_void;
use std::collections::VecDeque;
use std::format;
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use super::context::Cuda;
use super::error::driver_error;
use super::panics;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernel::KernelInfo;
use crate::runtime::queue::progress::Progress;

use attrib::Checker;
pub(crate) use event::{elapsed_ms, Fence, TimedEvent};

/// A stream of one context generation.
struct Stream {
    raw: sys::CUstream,
    generation: u64,
}

pub(crate) struct CudaQueue {
    cuda: &'static Cuda,
    /// Used with the queue's submit lock held (enqueueing), or read to wait.
    stream: Mutex<Stream>,
    /// Fences by label, increasing.
    fences: Mutex<VecDeque<(u64, Arc<Fence>)>>,
    /// The parameter storage of a launch, kept with its capacity so that
    /// launches allocate nothing. Locked only by `launch`, which runs with
    /// the queue's submit lock held, so it is never contended; inside it
    /// only a scope's own lock is taken (by `ScopeCopies::upload`), never the
    /// other way round.
    scratch: Mutex<Scratch>,
}

/// See [`CudaQueue::scratch`]: `slots` holds the scalars of the device
/// pointers and lengths, `params` one pointer per kernel parameter (into
/// `slots`, or to the caller's values). Both are only meaningful during
/// one `cuLaunchKernel` call.
#[derive(Default)]
struct Scratch {
    slots: Vec<u64>,
    params: Vec<*mut c_void>,
}

// SAFETY: CUDA handles may be used from any thread once their context is
// current (CUDA Driver API, "Context Management"); every use here makes the
// context current first (`Cuda::enter` or `current`). The pointers in
// `scratch` are never read outside the launch that wrote them.
unsafe impl Send for CudaQueue {}
// SAFETY: as above; mutable state is behind mutexes.
unsafe impl Sync for CudaQueue {}

impl CudaQueue {
    /// A queue with a stream of its own. Without the state's lock (see
    /// `Cuda::set_current`): making a queue never waits for another
    /// thread's blocking launch. The generation is read before the context
    /// is: a stream made while a rebuild runs is labelled with the older
    /// one, so it is never used (`stream_in_current` makes another) nor
    /// destroyed.
    pub(crate) fn new(cuda: &'static Cuda) -> Result<Self> {
        let generation = cuda.generation();
        cuda.set_current()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver_error("cuStreamCreate", None, e))?;
        Ok(CudaQueue {
            cuda,
            stream: Mutex::new(Stream { raw, generation }),
            fences: Mutex::new(VecDeque::new()),
            scratch: Mutex::new(Scratch::default()),
        })
    }

    /// The GPU this queue's stream belongs to.
    pub(crate) fn cuda(&self) -> &'static Cuda {
        self.cuda
    }

    /// The stream, made anew if the context was rebuilt since it was made.
    /// The context is current when this returns `Ok`.
    pub(crate) fn stream(&self) -> Result<sys::CUstream> {
        // Without the state's lock (see `Cuda::set_current`): recording,
        // waiting and copying on a queue never wait for another thread's
        // blocking launch.
        self.cuda.set_current()?;
        self.stream_in_current()
    }

    /// [`stream`](Self::stream) for a caller that has just made the
    /// context current on this thread (`Cuda::prepare`, `Cuda::enter`).
    fn stream_in_current(&self) -> Result<sys::CUstream> {
        let mut s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        if s.generation != self.cuda.generation() {
            s.raw = result::stream::create(result::stream::StreamKind::NonBlocking)
                .map_err(|e| driver_error("cuStreamCreate", None, e))?;
            s.generation = self.cuda.generation();
            self.fences.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        Ok(s.raw)
    }

    /// Notes a launch for error attribution (see `attrib`).
    pub(crate) fn note_kernel(&self, queue: u64, kernel: &'static KernelInfo) {
        panics::lock(&self.cuda.panics).unchecked.note(queue, kernel);
    }

    /// An event with timing recorded now (the caller holds the submit lock).
    pub(crate) fn record_timed(&self) -> Result<TimedEvent> {
        let stream = self.stream()?;
        let f = Fence::create(self.cuda, sys::CUevent_flags::CU_EVENT_DEFAULT)?;
        // SAFETY: event and stream belong to the current context.
        unsafe { result::event::record(f.raw, stream) }.map_err(|e| driver_error("cuEventRecord", None, e))?;
        Ok(TimedEvent(Arc::new(f)))
    }

    /// Makes the stream wait for `event` (the caller holds the submit lock).
    pub(crate) fn wait_event(&self, event: sys::CUevent) -> Result<()> {
        let stream = self.stream()?;
        // SAFETY: both belong to the current context (events of an older
        // generation are never handed out: `stream` cleared the fences).
        unsafe { result::stream::wait_event(stream, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| driver_error("cuStreamWaitEvent", None, e))
    }

    /// A fence that completes after operation `seq` (see the module docs).
    pub(crate) fn fence(&self, progress: &Progress, seq: u64) -> Result<Arc<Fence>> {
        let stream = self.stream()?;
        let mut fences = self.fences.lock().unwrap_or_else(|e| e.into_inner());
        while fences.front().is_some_and(|(label, _)| progress.is_done(*label)) && fences.len() > 1 {
            fences.pop_front();
        }
        if let Some((_, f)) = fences.iter().find(|(label, _)| *label >= seq) {
            return Ok(f.clone());
        }
        let f = Arc::new(Fence::create(self.cuda, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?);
        // SAFETY: event and stream belong to the current context. Operation
        // `seq` is already in the stream: uses are recorded after their
        // operation is enqueued (see `queue::enqueue`).
        unsafe { result::event::record(f.raw, stream) }.map_err(|e| driver_error("cuEventRecord", None, e))?;
        fences.push_back((seq, f.clone()));
        Ok(f)
    }

    /// Whether `seq` is complete, by asking the driver about an existing
    /// fence that covers it (none is recorded here).
    pub(crate) fn poll(&self, progress: &Progress, seq: u64) -> bool {
        let found = {
            let fences = self.fences.lock().unwrap_or_else(|e| e.into_inner());
            fences.iter().find(|(label, _)| *label >= seq).map(|(l, f)| (*l, f.clone()))
        };
        let Some((label, f)) = found else {
            return false;
        };
        if f.generation != self.cuda.generation() || self.cuda.set_current().is_err() {
            return false;
        }
        // SAFETY: an event of the current context generation.
        match unsafe { result::event::query(f.raw) } {
            Ok(()) => {
                progress.advance(label);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether `fence`, an event of this queue that completes after its
    /// operation `seq`, has completed: `cuEventQuery` of that event itself,
    /// without waiting (unlike [`poll`](Self::poll), which can only use the
    /// queue's own fences). On completion the progress advances to `seq`.
    ///
    /// Also complete, so that nobody polls forever: an event of a context
    /// that was rebuilt since (its work is gone, as in
    /// [`wait_timed`](Self::wait_timed)), and one whose query returns an
    /// error other than `CUDA_ERROR_NOT_READY` (a sticky fault): that error
    /// is kept as the queue's error for its next report and the context
    /// rebuilt, as [`wait_host`](Self::wait_host) does.
    pub(crate) fn query(&self, queue: u64, progress: &Progress, fence: &Fence, seq: u64) -> bool {
        if progress.is_done(seq) {
            return true;
        }
        if fence.generation == self.cuda.generation() {
            if let Err(e) = self.cuda.set_current() {
                progress.fail(e);
            } else {
                // SAFETY: an event of the current context generation.
                match unsafe { result::event::query(fence.raw) } {
                    Ok(()) => {}
                    Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => return false,
                    // Rebuilt by another thread between the check and the
                    // query: the event went with its context, and its work.
                    Err(_) if fence.generation != self.cuda.generation() => {}
                    Err(e) => progress.fail(self.fault(queue, e)),
                }
            }
        }
        progress.advance(seq);
        true
    }

    /// Blocks until `seq` is complete. A fault found here is kept as the
    /// queue's error (and the context rebuilt).
    pub(crate) fn wait_host(&self, queue: u64, progress: &Progress, seq: u64) {
        let waited = match self.fence(progress, seq) {
            // SAFETY: an event of the current context (`fence` made it current).
            Ok(f) => unsafe { result::event::synchronize(f.raw) }.map_err(|e| self.fault(queue, e)),
            // No fence (out of events?): wait for the whole stream instead,
            // never less than `seq`.
            Err(_) => self.stream().and_then(|stream| {
                // SAFETY: a stream of the current context (`stream` made it current).
                unsafe { result::stream::synchronize(stream) }.map_err(|e| self.fault(queue, e))
            }),
        };
        // After an error the context was rebuilt (or is unusable): the
        // queue's work is gone either way, so nothing is left to wait for.
        if let Err(e) = waited {
            progress.fail(e);
        }
        progress.advance(seq);
    }

    /// As [`wait_host`](Self::wait_host), for a timed event at `seq`.
    pub(crate) fn wait_timed(&self, queue: u64, progress: &Progress, e: &TimedEvent, seq: u64) {
        let waited = if e.0.generation != self.cuda.generation() {
            Ok(())
        } else {
            self.cuda.set_current().and_then(|()| {
                // SAFETY: an event of the current context generation.
                unsafe { result::event::synchronize(e.0.raw) }.map_err(|err| self.fault(queue, err))
            })
        };
        if let Err(err) = waited {
            progress.fail(err);
        }
        progress.advance(seq);
    }

    /// The error of a sticky fault seen while waiting for `queue`: the panic
    /// the device recorded, or the driver's error, naming the candidate
    /// kernels; then the context is rebuilt so that later work can run.
    fn fault(&self, queue: u64, e: DriverError) -> Error {
        let names = self.cuda.take_candidates(queue);
        let err = self.cuda.fault(&names, e);
        self.fences.lock().unwrap_or_else(|e| e.into_inner()).clear();
        err
    }

    /// After `queue`'s work up to now has been waited for: the panic the
    /// device recorded, if any, as the queue's error.
    pub(crate) fn collect_errors(&self, queue: u64) -> Option<Error> {
        self.cuda.take_panic(queue)
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        let s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(_st) = self.cuda.lock_generation(s.generation) {
            // SAFETY: created by `cuStreamCreate` in this generation,
            // destroyed once; `Queue`'s drop waited for its work ("in case
            // the device is still doing work in the stream ... resources
            // will be released automatically", `cuStreamDestroy`, anyway).
            let _ = unsafe { result::stream::destroy(s.raw) };
        }
    }
}

/// What queues need of the backend's state.
impl Cuda {
    /// The kernels a sticky fault found after waiting for `queue` may come
    /// from: the queue's unchecked launches (now checked, so removed), and,
    /// while other queues of this GPU have unchecked launches (still
    /// running, perhaps), theirs too. Spelled for the error's `kernel`
    /// field: `app::k`, or "one of `app::a`, `app::b`".
    fn take_candidates(&self, queue: u64) -> String {
        panics::lock(&self.panics).unchecked.take_names(queue)
    }

    /// The primary context in use.
    pub(crate) fn context(&self) -> sys::CUcontext {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).ctx
    }

    /// Makes the context current on this thread, after any rebuild in
    /// progress has finished (it takes the state's lock and releases it),
    /// for a graph's instantiation and a scope's end. Queue waits never
    /// call it; destroying a handle holds the lock instead
    /// ([`lock_generation`](Self::lock_generation)).
    pub(super) fn make_current(&self) -> Result<()> {
        drop(self.enter("cuCtxSetCurrent")?);
        Ok(())
    }

    /// The state's lock, with the context current, if handles of
    /// `generation` are still alive: held across a handle's destruction so
    /// that no rebuild resets the context meanwhile (the driver may reuse
    /// a dead handle's value for a new one, which the destroy would then
    /// hit). Waits for another thread's blocking launch, as only drops do.
    pub(super) fn lock_generation(&self, generation: u64) -> Option<std::sync::MutexGuard<'_, super::context::State>> {
        let st = self.enter("cuCtxSetCurrent").ok()?;
        (generation == self.generation()).then_some(st)
    }

    /// The function of `kernel`, allowed `shared` bytes of dynamic shared
    /// memory: the checks a blocking launch makes before it maps anything
    /// (`Error::KernelNotFound`, `Error::InstanceNotBuilt`,
    /// `Error::InvalidLaunch`).
    ///
    /// Takes the functions' lock only, never the state's: a blocking launch
    /// on another thread holds that one until its kernel has finished.
    pub(super) fn prepare(&self, kernel: &'static KernelInfo, shared: u32) -> Result<sys::CUfunction> {
        let mut functions = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        self.set_current()?;
        let function = functions.function(kernel)?;
        functions.allow_dynamic_shared(kernel, function, shared)?;
        Ok(function.f)
    }

    /// The panic of `queue`'s work, if the device recorded one (the record
    /// emptied) or one was kept for it, as its error naming the kernel (or
    /// candidates; see `attrib`); `queue`'s launches are checked by this.
    /// Call after waiting for the queue's work.
    ///
    /// Takes the panic lock only, never the state's: a blocking launch on
    /// another thread holds that one until its kernel has finished, and a
    /// queue's wait (`Queue::synchronize`, `Event::synchronize`, a
    /// future's poll) must not wait for it. That launch's kernel, while it
    /// runs, is a candidate for the record (see `attrib`).
    pub(super) fn take_panic(&self, queue: u64) -> Option<Error> {
        let mut p = panics::lock(&self.panics);
        // Made current under the lock: a record in the slot belongs to the
        // context now in use (a rebuild installs its new record after
        // storing the new context). Without the context (not expected) the
        // device's record stays for a later check; kept ones are reported
        // anyway.
        let (kernel, recorded) = match self.set_current() {
            Ok(()) => p.check(Checker::Queue(queue)),
            Err(_) => p.unchecked.check(Checker::Queue(queue), None),
        }?;
        let stack_bytes = p.stack_bytes;
        drop(p);
        Some(super::recover::divergence_from_record(recorded.into_error(&kernel, stack_bytes)))
    }

    /// A sticky fault `e` seen while waiting for queued work of `kernel`:
    /// its error (the recorded panic, or the driver's), after which the
    /// context is rebuilt as after a failed blocking launch.
    pub(super) fn fault(&self, kernel: &str, e: DriverError) -> Error {
        // Lock order: the state, then the panic lock (released before the
        // rebuild, which takes it again).
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Reading the panic record needs this GPU's context (the caller's
        // thread may have made another current since).
        let _ = self.set_current();
        let err = {
            let p = panics::lock(&self.panics);
            super::recover::failed_launch_error(p.slot.as_ref(), kernel, e, p.stack_bytes)
        };
        let err = super::recover::divergence_from_record(err);
        st.cache.forget();
        match st.rebuild() {
            Ok(()) => err,
            Err(rebuild) => Error::from(crate::error::Driver {
                op: "rebuilding the CUDA context after a failed kernel",
                kernel: Some(kernel.into()),
                code: 0,
                name: "CUDA_ERROR_UNKNOWN".into(),
                text: format!(
                    "{rebuild}; the kernel's own failure was: {err}. CUDA leaves a context in this state unusable \
                     until the process ends: restart the program"
                ),
                log: None,
            }),
        }
    }
}
