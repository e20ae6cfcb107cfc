//! Events of the CUDA queues: [`Fence`] (an event a wait is ordered
//! behind), [`TimedEvent`] (an [`Event`](crate::Event) with timing) and
//! [`elapsed_ms`], with the context generation they are checked against
//! and [`current`], which makes the primary context current. Used by the
//! queue core (`queue`), its copies (`copy`) and graphs (`graph`); imports
//! none of them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys;

use super::super::context::set_current;
use super::super::error::driver_error;
use crate::runtime::error::{Error, Result};

/// The current context generation: it changes when the context is rebuilt
/// after a sticky fault (see `cuda::State::rebuild`).
pub(crate) fn generation() -> u64 {
    crate::runtime::GENERATION.load(Ordering::Acquire)
}

/// An event of one context generation, destroyed when dropped.
pub(crate) struct Fence {
    pub(super) raw: sys::CUevent,
    pub(super) generation: u64,
}

// SAFETY: as for `CudaQueue`.
unsafe impl Send for Fence {}
// SAFETY: as above.
unsafe impl Sync for Fence {}

impl Fence {
    pub(crate) fn raw(&self) -> sys::CUevent {
        self.raw
    }

    pub(super) fn create(flags: sys::CUevent_flags) -> Result<Fence> {
        let raw =
            result::event::create(flags).map_err(|e| driver_error("cuEventCreate", None, e))?;
        Ok(Fence {
            raw,
            generation: generation(),
        })
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // An event of a context that was reset is gone with it.
        if self.generation == generation() && set_current().is_ok() {
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

    /// The event as a fence: what [`CudaQueue::query`] asks about and an
    /// event's future keeps.
    pub(crate) fn fence(&self) -> &Arc<Fence> {
        &self.0
    }
}

/// Makes the primary context current on this thread.
pub(super) fn current() -> Result<()> {
    let Ok(rt) = crate::runtime::get() else {
        return Err(Error::from(crate::error::Queue {
            op: "use CUDA",
            reason: "no runtime".into(),
        }));
    };
    match rt.backend.concrete() {
        crate::runtime::Concrete::Cuda(c) => c.make_current(),
        crate::runtime::Concrete::Host(_) => Err(Error::from(crate::error::Queue {
            op: "use CUDA",
            reason: "the host fallback runs kernels".into(),
        })),
    }
}

/// Milliseconds between two timed events (`cuEventElapsedTime`).
pub(crate) fn elapsed_ms(a: &TimedEvent, b: &TimedEvent) -> Result<f32> {
    if a.0.generation != generation() || b.0.generation != generation() {
        return Err(Error::from(crate::error::Queue {
            op: "time events",
            reason: "the CUDA context was rebuilt after a fault since the events were recorded"
                .into(),
        }));
    }
    set_current()?;
    // SAFETY: both events belong to the current context and have completed
    // (the caller waited for them).
    unsafe { result::event::elapsed(a.0.raw, b.0.raw) }
        .map_err(|e| driver_error("cuEventElapsedTime", None, e))
}
