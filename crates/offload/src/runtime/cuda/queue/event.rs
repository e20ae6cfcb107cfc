//! Events of the CUDA queues: [`Fence`] (an event a wait is ordered
//! behind), [`TimedEvent`] (an [`Event`](crate::Event) with timing) and
//! [`elapsed_ms`]. Each event belongs to one GPU's context of one
//! generation (see `cuda::Current`), and every call on it makes that
//! context current first. Used by the queue core (`queue`), its copies
//! (`copy`) and graphs (`graph`); imports none of them.

use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys;

use super::super::context::Cuda;
use super::super::error::driver_error;
use crate::runtime::error::{Error, Result};

/// An event of one context generation, destroyed when dropped.
pub(crate) struct Fence {
    pub(super) raw: sys::CUevent,
    pub(super) generation: u64,
    /// The GPU whose context the event belongs to.
    pub(super) cuda: &'static Cuda,
}

// SAFETY: as for `CudaQueue`.
unsafe impl Send for Fence {}
// SAFETY: as above.
unsafe impl Sync for Fence {}

impl Fence {
    pub(crate) fn raw(&self) -> sys::CUevent {
        self.raw
    }

    /// An event of `cuda`'s context, which is current (the caller made it so).
    pub(super) fn create(cuda: &'static Cuda, flags: sys::CUevent_flags) -> Result<Fence> {
        let raw = result::event::create(flags).map_err(|e| driver_error("cuEventCreate", None, e))?;
        Ok(Fence { raw, generation: cuda.generation(), cuda })
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // An event of a context that was reset is gone with it.
        if self.generation == self.cuda.generation() && self.cuda.set_current().is_ok() {
            // SAFETY: created by `cuEventCreate` in this context generation,
            // destroyed once. Destroying an event that a stream still waits
            // for is allowed: "resources will be released automatically once
            // the device has completed the event" (`cuEventDestroy`).
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

/// An event with timing, for [`Event`](crate::Event).
pub(crate) struct TimedEvent(pub(super) Arc<Fence>);

impl TimedEvent {
    pub(crate) fn raw(&self) -> sys::CUevent {
        self.0.raw
    }

    /// The event as a fence: what [`CudaQueue::query`](super::CudaQueue::query)
    /// asks about and an event's future keeps.
    pub(crate) fn fence(&self) -> &Arc<Fence> {
        &self.0
    }
}

/// Milliseconds between two timed events (`cuEventElapsedTime`).
///
/// # Errors
/// [`Error::Queue`] for events of two GPUs, or of a context rebuilt since;
/// [`Error::Driver`] if the driver fails.
pub(crate) fn elapsed_ms(a: &TimedEvent, b: &TimedEvent) -> Result<f32> {
    let cuda = a.0.cuda;
    if !core::ptr::eq(cuda, b.0.cuda) {
        return Err(Error::from(crate::error::Queue {
            op: "time events",
            reason: "the events were recorded on queues of two devices: time events of one device".into(),
        }));
    }
    if a.0.generation != cuda.generation() || b.0.generation != cuda.generation() {
        return Err(Error::from(crate::error::Queue {
            op: "time events",
            reason: "the CUDA context was rebuilt after a fault since the events were recorded".into(),
        }));
    }
    cuda.set_current()?;
    // SAFETY: both events belong to the current context and have completed
    // (the caller waited for them).
    unsafe { result::event::elapsed(a.0.raw, b.0.raw) }.map_err(|e| driver_error("cuEventElapsedTime", None, e))
}
