//! [`Event`]s: points in a queue, recorded ([`Queue::record`]), waited
//! for by other queues ([`Queue::wait`]) or the host, and timed.

use std::string::String;
use std::sync::Arc;

use super::capture::refuse_in_capture;
use super::handle::Queue;
use super::inner::{Imp, Waiter};
use crate::runtime::cuda::queue::{elapsed_ms, Fence, TimedEvent};
use crate::runtime::error::{Error, Result};

impl Queue {
    /// An [`Event`] that completes when the work enqueued so far has
    /// finished (`cuEventRecord`).
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuEventCreate` / `cuEventRecord` fails;
    /// [`Error::Queue`] inside [`capture`](Self::capture).
    pub fn record(&self) -> Result<Event> {
        refuse_in_capture(&self.inner, "record an event")?;
        let mut seq = self.inner.lock_submit();
        let timing = match &self.inner.imp {
            Imp::Host(h) => {
                *seq += 1;
                let stamp = Arc::new(std::sync::OnceLock::new());
                let s = stamp.clone();
                h.send(
                    *seq,
                    std::boxed::Box::new(move || {
                        let _ = s.set(std::time::Instant::now());
                        Ok(())
                    }),
                );
                Timing::Host(stamp)
            }
            Imp::Cuda(c) => Timing::Cuda(c.record_timed()?),
        };
        Ok(Event { queue: Waiter::new(&self.inner), seq: *seq, timing })
    }

    /// Makes the work enqueued on this queue from now on wait until
    /// `event` has completed (`cuStreamWaitEvent`). Returns at once.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuStreamWaitEvent` fails; [`Error::Queue`]
    /// inside [`capture`](Self::capture).
    pub fn wait(&self, event: &Event) -> Result<()> {
        refuse_in_capture(&self.inner, "wait for an event")?;
        if Arc::ptr_eq(&event.queue, &self.inner) {
            return Ok(());
        }
        let mut seq = self.inner.lock_submit();
        match (&self.inner.imp, &event.timing) {
            (Imp::Cuda(c), Timing::Cuda(e)) => c.wait_event(e.raw())?,
            _ => self.inner.wait_for_locked(&mut seq, &event.queue, event.seq)?,
        }
        Ok(())
    }
}

/// A point in a queue: complete once the work enqueued on its queue before
/// [`Queue::record`] has finished (a CUDA event, `cuEventRecord`; on the
/// host fallback a marker the worker reaches).
///
/// `Send + Sync`; [`Queue::wait`] on any queue, any number of times.
/// `.await` it (see [`Wait`](crate::Wait)), or [`synchronize`](Self::synchronize).
pub struct Event {
    pub(crate) queue: Waiter,
    pub(crate) seq: u64,
    timing: Timing,
}

enum Timing {
    Host(Arc<std::sync::OnceLock<std::time::Instant>>),
    Cuda(TimedEvent),
}

impl Event {
    /// Waits until the event has completed, then reports its queue's first
    /// error since the last report, as [`Queue::synchronize`] does.
    ///
    /// # Errors
    /// That error; [`Error::Queue`] inside [`Queue::capture`] or while
    /// another thread captures the event's queue (CUDA forbids waiting
    /// during stream capture), without waiting.
    pub fn synchronize(&self) -> Result<()> {
        refuse_in_capture(&self.queue, "synchronize an event")?;
        self.wait_quietly();
        self.queue.collect_errors();
        self.queue.progress.take_error()
    }

    /// Waits for the event itself (CUDA: `cuEventSynchronize` of its event,
    /// not of a later point of its queue); errors are left for the queue's
    /// next report.
    fn wait_quietly(&self) {
        match (&self.timing, &self.queue.imp) {
            (Timing::Cuda(e), Imp::Cuda(c)) => c.wait_timed(self.queue.id, &self.queue.progress, e, self.seq),
            _ => self.queue.wait_host(self.seq),
        }
    }

    /// The CUDA event, as the fence that completes after the event's point.
    pub(crate) fn fence(&self) -> Option<&Arc<Fence>> {
        match &self.timing {
            Timing::Cuda(e) => Some(e.fence()),
            Timing::Host(_) => None,
        }
    }

    /// Whether the event has completed (`cuEventQuery` of its event); does
    /// not wait. A fault the query finds is kept for the queue's next
    /// report (the event then counts as complete: its work is over).
    pub fn is_complete(&self) -> bool {
        self.queue.reached(self.seq, self.fence().map(|f| &**f))
    }

    /// Milliseconds from `self` to `end` (`cuEventElapsedTime`, about
    /// 0.5 µs resolution; the host fallback's clock there). Waits for both
    /// events first; does not report queue errors.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuEventElapsedTime` fails; [`Error::Queue`]
    /// inside [`Queue::capture`] or while another thread captures either
    /// event's queue.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        refuse_in_capture(&self.queue, "time events")?;
        refuse_in_capture(&end.queue, "time events")?;
        self.wait_quietly();
        end.wait_quietly();
        match (&self.timing, &end.timing) {
            (Timing::Host(a), Timing::Host(b)) => {
                let (a, b) = (a.get().copied(), b.get().copied());
                match (a, b) {
                    (Some(a), Some(b)) => Ok(if b >= a {
                        (b - a).as_secs_f64() as f32 * 1e3
                    } else {
                        -((a - b).as_secs_f64() as f32 * 1e3)
                    }),
                    _ => Err(Error::from(crate::error::Queue {
                        op: "time events",
                        reason: String::from("an event was never reached"),
                    })),
                }
            }
            (Timing::Cuda(a), Timing::Cuda(b)) => elapsed_ms(a, b),
            _ => Err(Error::from(crate::error::Queue {
                op: "time events",
                reason: String::from("the events were recorded on queues of two devices: time events of one device"),
            })),
        }
    }
}

impl core::fmt::Debug for Event {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Event").field("queue", &self.queue.id).field("seq", &self.seq).finish()
    }
}
