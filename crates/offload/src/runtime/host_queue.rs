//! The host fallback's queues: one worker thread per [`Queue`](crate::Queue)
//! that runs the queue's operations in the order they were enqueued, each
//! to its end (a kernel's blocks still run on `OFFLOAD_HOST_THREADS`
//! threads, as in a blocking launch). After each operation the worker
//! advances the queue's [`Progress`], which wakes waiting threads and
//! futures; the first failing operation's error is kept for the next
//! synchronization (`docs/async.md`, section 5).

use std::boxed::Box;
use std::format;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::runtime::error::{Error, Result};
use crate::runtime::queue::progress::Progress;

/// One operation of a host queue.
pub(crate) type Op = Box<dyn FnOnce() -> Result<()> + Send + 'static>;

pub(crate) struct HostQueue {
    tx: Mutex<Option<Sender<(u64, Op)>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    progress: Arc<Progress>,
}

impl HostQueue {
    /// Starts the worker `offload-queue-<id>`.
    pub(crate) fn new(id: u64, progress: Arc<Progress>) -> Result<Self> {
        let (tx, rx) = channel::<(u64, Op)>();
        let p = progress.clone();
        let worker = std::thread::Builder::new()
            .name(format!("offload-queue-{id}"))
            .spawn(move || {
                for (seq, op) in rx {
                    // Operations report failures as errors; a panic here
                    // would be a bug of offload, but must not leave
                    // waiters blocked forever.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op)).unwrap_or_else(|_| {
                        Err(Error::from(crate::error::Queue {
                            op: "run a queued operation",
                            reason: "the host queue's operation panicked outside a kernel (a bug of offload)".into(),
                        }))
                    });
                    if let Err(e) = r {
                        p.fail(e);
                    }
                    p.advance(seq);
                }
            })
            .map_err(|e| {
                Error::from(crate::error::Queue {
                    op: "create a queue",
                    reason: format!("the host fallback could not start the queue's worker thread: {e}"),
                })
            })?;
        Ok(HostQueue { tx: Mutex::new(Some(tx)), worker: Mutex::new(Some(worker)), progress })
    }

    /// Hands operation `seq` to the worker. The caller holds the queue's
    /// submit lock, so operations arrive in sequence order.
    pub(crate) fn send(&self, seq: u64, op: Op) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        match tx.as_ref().map(|t| t.send((seq, op))) {
            Some(Ok(())) => {}
            // The worker is gone (the queue was dropped, which a live
            // `&Queue` excludes): nothing will run it; say so and let
            // waiters go.
            _ => {
                self.progress.fail(Error::from(crate::error::Queue {
                    op: "enqueue",
                    reason: "the queue's worker thread has stopped".into(),
                }));
                self.progress.advance(seq);
            }
        }
    }

    /// Stops the worker after the operations already sent, and joins it.
    pub(crate) fn stop(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(w) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = w.join();
        }
    }
}
