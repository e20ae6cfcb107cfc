//! Futures: a queue's synchronization or an [`Event`] as
//! `Future<Output = Result<()>>`, for any executor (tokio, async-std, …).
//!
//! On the host fallback the queue's worker wakes the task when it reaches
//! the point. On CUDA one helper thread, `offload-events`, polls the events
//! of pending futures (`cuEventQuery`) and wakes their tasks; it waits
//! 20 µs between rounds at first, backing off to 1 ms while nothing
//! completes, and sleeps while no future is pending. Each future polls its
//! own event: an [`Event`]'s future the event itself (so it is ready when
//! the event is, not when later work of its queue is), a queue's
//! synchronization an event recorded when the future was made.

use core::future::{Future, IntoFuture};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::vec::Vec;

use super::inner::Waiter;
use super::{Event, Imp, Queue, QueueInner};
use crate::runtime::cuda::queue::Fence;
use crate::runtime::error::Result;

/// A future that completes when a point of a queue has been reached,
/// with the queue's first error since the last report (what
/// [`Queue::synchronize`] / [`Event::synchronize`] would return).
/// `Send + 'static`: spawn it on any executor.
#[must_use = "a future does nothing unless awaited"]
pub struct Wait {
    queue: Waiter,
    seq: u64,
    /// CUDA: the event that completes after `(queue, seq)`, which the
    /// future polls.
    fence: Option<Arc<Fence>>,
    /// An error found when the future was made (reported at the first poll).
    early: Option<crate::Error>,
}

impl Queue {
    /// A future of [`synchronize`](Self::synchronize): ready once the work
    /// enqueued so far has finished.
    ///
    /// ```ignore
    /// saxpy::on(&q, cfg, 2.0, &x, &mut y)?;
    /// q.synchronize_async().await?;
    /// ```
    ///
    /// Made inside [`capture`](Self::capture), or while another thread
    /// captures this queue, the future is ready at once with
    /// [`Error::Queue`](crate::Error::Queue), as `synchronize` is; so is
    /// the future of an [`Event`] (`event.await`).
    pub fn synchronize_async(&self) -> Wait {
        let seq = *self.inner.lock_submit();
        Wait::new(Waiter::new(&self.inner), seq, None)
    }
}

impl IntoFuture for Event {
    type Output = Result<()>;
    type IntoFuture = Wait;
    fn into_future(self) -> Wait {
        let fence = self.fence().cloned();
        Wait::new(self.queue, self.seq, fence)
    }
}

impl IntoFuture for &Event {
    type Output = Result<()>;
    type IntoFuture = Wait;
    fn into_future(self) -> Wait {
        Wait::new(self.queue.clone(), self.seq, self.fence().cloned())
    }
}

impl Wait {
    /// A future of `(queue, seq)`; `fence`: an event's own event (CUDA).
    fn new(queue: Waiter, seq: u64, fence: Option<Arc<Fence>>) -> Wait {
        // As `Queue::synchronize`: no waiting inside a capture, nor on a
        // queue another thread is capturing (reported at the first poll).
        if let Err(e) = super::capture::refuse_in_capture(&queue, "wait for a queue's future") {
            return Wait { queue, seq, fence: None, early: Some(e) };
        }
        let (fence, early) = match &queue.imp {
            // A queue's synchronization: a fence for the poller to query
            // (none may exist yet).
            Imp::Cuda(c) if fence.is_none() && !queue.progress.is_done(seq) => match c.fence(&queue.progress, seq) {
                Ok(f) => (Some(f), None),
                Err(e) => (None, Some(e)),
            },
            _ => (fence, None),
        };
        Wait { queue, seq, fence, early }
    }

    fn reached(&self) -> bool {
        self.queue.reached(self.seq, self.fence.as_deref())
    }
}

impl Future for Wait {
    type Output = Result<()>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if let Some(e) = self.early.take() {
            return Poll::Ready(Err(e));
        }
        loop {
            if self.reached() {
                self.queue.collect_errors();
                return Poll::Ready(self.queue.progress.take_error());
            }
            match &self.queue.imp {
                Imp::Host(_) => {
                    if self.queue.progress.register(self.seq, cx.waker()) {
                        return Poll::Pending;
                    }
                }
                Imp::Cuda(_) => {
                    poller().add(Pending {
                        queue: Arc::clone(&self.queue),
                        seq: self.seq,
                        fence: self.fence.clone(),
                        waker: cx.waker().clone(),
                    });
                    return Poll::Pending;
                }
            }
        }
    }
}

impl core::fmt::Debug for Wait {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Wait").field("queue", &self.queue.id).field("seq", &self.seq).finish()
    }
}

/// The CUDA futures' helper thread.
struct Poller {
    pending: Mutex<Vec<Pending>>,
    cv: Condvar,
}

/// A future waiting for `(queue, seq)`, which `fence` completes after.
struct Pending {
    queue: Arc<QueueInner>,
    seq: u64,
    fence: Option<Arc<Fence>>,
    waker: Waker,
}

fn poller() -> &'static Poller {
    static POLLER: OnceLock<&'static Poller> = OnceLock::new();
    POLLER.get_or_init(|| {
        let p: &'static Poller =
            std::boxed::Box::leak(std::boxed::Box::new(Poller { pending: Mutex::new(Vec::new()), cv: Condvar::new() }));
        let spawned = std::thread::Builder::new().name("offload-events".into()).spawn(move || p.run());
        if spawned.is_err() {
            std::eprintln!(
                "offload: warning: could not start the thread that completes CUDA futures; they will not complete"
            );
        }
        p
    })
}

impl Poller {
    fn add(&self, pending: Pending) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.push(pending);
        self.cv.notify_one();
    }

    fn run(&self) {
        let mut pause = std::time::Duration::from_micros(20);
        loop {
            let ready: Vec<Waker> = {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                while p.is_empty() {
                    p = self.cv.wait(p).unwrap_or_else(|e| e.into_inner());
                }
                let mut ready = Vec::new();
                let mut i = 0;
                while i < p.len() {
                    if p[i].queue.reached(p[i].seq, p[i].fence.as_deref()) {
                        ready.push(p.swap_remove(i).waker);
                    } else {
                        i += 1;
                    }
                }
                ready
            };
            if ready.is_empty() {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(1));
            } else {
                pause = std::time::Duration::from_micros(20);
                for w in ready {
                    w.wake();
                }
            }
        }
    }
}
