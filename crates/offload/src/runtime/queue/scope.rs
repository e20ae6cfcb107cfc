//! `offload::scope`: queued work on borrowed host memory, made sound the
//! way `std::thread::scope` makes borrowing threads sound: everything the
//! closure enqueues may borrow for `'scope`, and the scope waits for the
//! queue before it returns, so no borrow ends while work still uses it.

use core::marker::PhantomData;
use core::ops::Deref;
use std::sync::{Arc, Mutex};

use super::copy::{self, CopyOp, Dir};
use super::{Queue, QueueInner};
use crate::runtime::cuda::queue::scope::ScopeCopies;
use crate::runtime::device_backend::check_buffer;
use crate::runtime::error::Result;
use crate::{DeviceBuffer, DeviceCopy};

/// A scope of queued work on a [`Queue`] that may borrow host memory; see
/// [`scope`]. Derefs to its queue.
pub struct Scope<'scope, 'env: 'scope> {
    queue: &'env Queue,
    pub(crate) state: ScopeState,
    /// Invariant in both lifetimes, as `std::thread::Scope`.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// What the backends need of a scope.
pub(crate) struct ScopeState {
    pub(crate) queue: Arc<QueueInner>,
    /// CUDA: device copies of borrowed host memory, and the copies back
    /// that the scope's end makes.
    pub(crate) copies: Mutex<ScopeCopies>,
}

/// Runs `f` with a [`Scope`] on `q` in which queued launches and copies may
/// borrow host memory (`Vec`s, slices, `&T`) until the scope ends, then
/// waits for everything enqueued on `q` so far, copies results back into
/// the borrowed host memory (CUDA) and returns.
///
/// ```ignore
/// offload::scope(&q, |s| {
///     saxpy::on(s, offload::for_len(n), 3.0, &x, &mut y)?; // y: a Vec, borrowed until the end
///     s.memcpy_dtoh(&d, &mut out)?;
///     Ok(())
/// })?; // y and out hold the results here
/// ```
///
/// The borrow checker rejects any use of memory borrowed by the scope's
/// work before the scope has returned, and memory created inside `f`
/// (which would be freed while work still uses it): `tests/ui/async/`.
///
/// # Errors
/// `f`'s error if it returned one (the queue's own error then stays for its
/// next synchronization); else the first error of the queue's work
/// (`docs/async.md`, section 5); [`Error::Queue`](crate::Error::Queue),
/// without calling `f`, inside [`Queue::capture`] or while another thread
/// captures `q` (the scope's end synchronizes). If `f` panics, the scope waits for the
/// queue, then resumes the panic (the queue's error again stays).
pub fn scope<'env, R>(
    q: &'env Queue,
    f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R>,
) -> Result<R> {
    // A scope ends with a synchronization: refused where that is.
    super::capture::refuse_in_capture(&q.inner, "open a scope")?;
    let s = Scope {
        queue: q,
        state: ScopeState { queue: q.inner.clone(), copies: Mutex::new(ScopeCopies::default()) },
        _scope: PhantomData,
        _env: PhantomData,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&s)));
    s.finish();
    match r {
        Err(panic) => std::panic::resume_unwind(panic),
        // The queue's error is not `f`'s to drop: it stays pending, so the
        // queue's next synchronization reports it.
        Ok(Err(e)) => Err(e),
        Ok(Ok(v)) => q.inner.progress.take_error().map(|()| v),
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Waits for the queue, copies back, frees the scope's device memory.
    /// Errors, of the queue's work and of the copies back (in that order),
    /// join the queue's pending error: [`scope`] takes it or leaves it.
    fn finish(&self) {
        let q = &self.state.queue;
        let seq = *q.lock_submit();
        q.wait_host(seq);
        q.collect_errors();
        let back = match &q.imp {
            super::Imp::Cuda(c) => self.state.copies.lock().unwrap_or_else(|e| e.into_inner()).finish(c.cuda()),
            super::Imp::Host(_) => Ok(()),
        };
        if let Err(e) = back {
            q.progress.fail(e);
        }
    }

    /// Enqueues a copy of the host memory `src` into `dst` (host → device).
    /// `src` stays borrowed until the scope ends. CUDA:
    /// `cuMemcpyHtoDAsync` from pageable memory, which returns once the
    /// driver has staged the data; use a [`PinnedBuffer`](crate::PinnedBuffer)
    /// and [`Queue::memcpy_htod`] for copies that overlap kernels.
    ///
    /// # Errors
    /// [`Error::Memory`](crate::Error::Memory) if the lengths differ
    /// (nothing is enqueued); [`Error::Driver`](crate::Error::Driver) if
    /// the driver refuses the copy.
    pub fn memcpy_htod<T: DeviceCopy>(&'scope self, src: &'scope [T], dst: &mut DeviceBuffer<T>) -> Result<()> {
        copy::check_len("enqueue a copy into a DeviceBuffer", src.len(), dst.len())?;
        check_buffer("Scope::memcpy_htod", "dst", self.state.queue.device, dst.device())?;
        let copy =
            CopyOp { dir: Dir::HtoD, dst: dst.addr(), src: src.as_ptr() as u64, bytes: core::mem::size_of_val(src) };
        // SAFETY: `src` is borrowed until the scope ends, which waits for
        // the copy; `dst` is tracked.
        unsafe { copy::enqueue(&self.state.queue, copy, &[(&dst.res.tracker, true)], &[(&dst.res, true)], true) }
    }

    /// Enqueues a copy of `src` into the host memory `dst` (device → host),
    /// which holds the data once the scope has returned (it stays borrowed
    /// until then). CUDA: a device copy now (`cuMemcpyDtoDAsync`), copied
    /// to `dst` at the scope's end.
    ///
    /// # Errors
    /// As [`memcpy_htod`](Self::memcpy_htod).
    pub fn memcpy_dtoh<T: DeviceCopy>(&'scope self, src: &DeviceBuffer<T>, dst: &'scope mut [T]) -> Result<()> {
        copy::check_len("enqueue a copy out of a DeviceBuffer", src.len(), dst.len())?;
        check_buffer("Scope::memcpy_dtoh", "src", self.state.queue.device, src.device())?;
        let bytes = core::mem::size_of_val(dst);
        let copy = CopyOp { dir: Dir::DtoH, dst: dst.as_mut_ptr() as u64, src: src.addr(), bytes };
        let copy = match &self.state.queue.imp {
            super::Imp::Host(_) => copy,
            super::Imp::Cuda(c) => {
                // The device copy is allocated in the queue's stream (in
                // stream order, `cuda::pool`): under the submit lock, after
                // the capture checks the copy's enqueue makes, so never in a
                // stream being captured (it would be a node of the graph).
                let q = &self.state.queue;
                let _seq = q.lock_submit();
                super::capture::refuse_captured_by_another_thread(q, "enqueue a copy")?;
                if super::capture::is_capturing(q) {
                    return Err(copy::host_copy_in_capture());
                }
                super::capture::refuse_other_queue_in_capture("enqueue a copy")?;
                // Makes the context current.
                let stream = c.stream()?;
                let mut copies = self.state.copies.lock().unwrap_or_else(|e| e.into_inner());
                let host = dst.as_mut_ptr() as *mut u8;
                // SAFETY: `dst` is borrowed until the scope ends, which
                // copies into it after waiting for the queue; the context is
                // current and the stream is not being captured (checked
                // above, under the lock that a capture's start takes).
                let temp = unsafe { copies.download_later(c.cuda(), stream, host, bytes) }?;
                CopyOp { dir: Dir::DtoD, dst: temp, src: src.addr(), bytes }
            }
        };
        // SAFETY: `dst` (or the scope's device copy of it) lives until the
        // scope ends, which waits for the copy; `src` is tracked.
        unsafe { copy::enqueue(&self.state.queue, copy, &[(&src.res.tracker, false)], &[(&src.res, false)], true) }
    }
}

impl Deref for Scope<'_, '_> {
    type Target = Queue;
    fn deref(&self) -> &Queue {
        self.queue
    }
}

impl core::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scope").field("queue", &self.queue).finish()
    }
}
