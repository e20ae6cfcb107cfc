//! What is known of a queue's progress: how far its work has finished, who
//! waits for more (threads and futures), and the first error of its work.
//! Shared by the queue ([`QueueInner`](super::QueueInner)) and its
//! backend's half (`runtime::host_queue`'s worker, `runtime::cuda::queue`),
//! which advance it; it uses neither.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::task::Waker;
use std::vec::Vec;

use crate::runtime::error::{Error, Result};

/// What is known of a queue's progress, shared with its host worker.
pub(crate) struct Progress {
    /// Every operation up to this sequence number has finished (a lower
    /// bound: on CUDA it advances when an event or sync is observed).
    pub(crate) completed: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
    /// Futures waiting for a sequence number.
    wakers: Mutex<Vec<(u64, Waker)>>,
    /// The first error of the queue's work since it was last reported.
    error: Mutex<Option<Error>>,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Progress {
            completed: AtomicU64::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            error: Mutex::new(None),
        }
    }

    pub(crate) fn is_done(&self, seq: u64) -> bool {
        self.completed.load(Ordering::Acquire) >= seq
    }

    /// Records that everything up to `seq` has finished, and wakes whoever
    /// waits for it.
    pub(crate) fn advance(&self, seq: u64) {
        let prev = self.completed.fetch_max(seq, Ordering::AcqRel);
        if prev >= seq {
            return;
        }
        {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
        let mut w = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        let mut i = 0;
        while i < w.len() {
            if w[i].0 <= seq {
                w.swap_remove(i).1.wake();
            } else {
                i += 1;
            }
        }
    }

    /// Blocks until everything up to `seq` has finished (host worker
    /// queues only: their worker advances the count).
    pub(crate) fn block_until(&self, seq: u64) {
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_done(seq) {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Registers `waker` to be woken once `seq` has finished; `false` if it
    /// already has (then nothing is registered).
    pub(crate) fn register(&self, seq: u64, waker: &Waker) -> bool {
        let mut w = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_done(seq) {
            return false;
        }
        if let Some(slot) = w.iter_mut().find(|(s, old)| *s == seq && old.will_wake(waker)) {
            slot.1 = waker.clone();
        } else {
            w.push((seq, waker.clone()));
        }
        true
    }

    /// Keeps `e` if no error is pending yet.
    pub(crate) fn fail(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    /// The pending error, cleared.
    pub(crate) fn take_error(&self) -> Result<()> {
        match self.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
