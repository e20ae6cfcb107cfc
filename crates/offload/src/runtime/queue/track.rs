//! Pending work of buffers: cudarc's read/write-event model, with
//! sequence numbers of queues in place of events.
//!
//! Each [`DeviceBuffer`](crate::DeviceBuffer) and
//! [`PinnedBuffer`](crate::PinnedBuffer) has a [`Tracker`]: the last queued
//! operation that writes the buffer and, per queue, the last one that reads
//! it. A queued operation first makes its queue wait for the conflicting
//! entries of other queues (a write waits for writes and reads, a read for
//! the write), then becomes an entry itself. Host access waits on the host
//! for the same entries. Entries of one queue need no wait among
//! themselves: the queue orders them.
//!
//! Entries are added only by operations that hold the buffer's borrow
//! (`&` for a read, `&mut` for a write) while enqueueing, so no conflicting
//! entry can appear between the snapshot of the entries and the new one.
//!
//! Device memory whose buffer is dropped while work is pending goes to a
//! graveyard and is freed once that work has finished ([`reap`]): never
//! under a running kernel or copy.

use std::boxed::Box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::inner::QueueInner;
use crate::runtime::device::Device;
use crate::runtime::error::Result;

/// One queued operation's use of a buffer: complete once `(queue, seq)` is.
#[derive(Clone)]
pub(crate) struct Use {
    pub(crate) queue: Arc<QueueInner>,
    pub(crate) seq: u64,
}

impl Use {
    fn is_done(&self) -> bool {
        self.queue.is_done(self.seq)
    }
}

#[derive(Default)]
struct Uses {
    write: Option<Use>,
    reads: Vec<Use>,
}

/// The pending work of one buffer.
#[derive(Default)]
pub(crate) struct Tracker {
    uses: Mutex<Uses>,
    /// `false` when `uses` is known to be empty: host access then takes no
    /// lock (a `PinnedBuffer` is dereferenced on every index).
    busy: AtomicBool,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Uses> {
        self.uses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entries an access must wait for: the write, and for a write
    /// access also the reads; those of `queue` (if any) are left out, and
    /// so are those known to be complete (which are dropped).
    pub(crate) fn conflicts(&self, queue: Option<&QueueInner>, write: bool) -> Vec<Use> {
        if !self.busy.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut u = self.lock();
        let mine = |x: &Use| queue.is_some_and(|q| core::ptr::eq(Arc::as_ptr(&x.queue), q));
        // The common case of a program with one queue: every entry is
        // `queue`'s own, so nothing conflicts and nothing is dropped.
        if queue.is_some() && u.write.as_ref().is_none_or(mine) && u.reads.iter().all(mine) {
            return Vec::new();
        }
        // Entries of `queue` itself never conflict (the queue orders them),
        // so they are kept without asking whether they are complete (a
        // lock, perhaps a driver query, on every queued launch); entries of
        // other queues are dropped once complete.
        if u.write.as_ref().is_some_and(|w| !mine(w) && w.is_done()) {
            u.write = None;
        }
        u.reads.retain(|r| mine(r) || !r.is_done());
        if u.write.is_none() && u.reads.is_empty() {
            self.busy.store(false, Ordering::Release);
        }
        let mut out: Vec<Use> = u.write.iter().filter(|w| !mine(w)).cloned().collect();
        if write {
            out.extend(u.reads.iter().filter(|r| !mine(r)).cloned());
        }
        out
    }

    /// Blocks until host access (a read, or a write if `write`) is safe:
    /// every conflicting entry is complete. Errors of the work are left
    /// for its queue's next report.
    pub(crate) fn wait_host(&self, write: bool) {
        for u in self.conflicts(None, write) {
            u.queue.wait_host(u.seq);
        }
    }

    /// Records a queued operation `(queue, seq)` on the buffer: the write
    /// (replacing every entry: the operation waited for them), or a read
    /// (replacing the queue's earlier read).
    pub(crate) fn record(&self, queue: &Arc<QueueInner>, seq: u64, write: bool) {
        let mut u = self.lock();
        let new = Use { queue: queue.clone(), seq };
        if write {
            u.write = Some(new);
            u.reads.clear();
        } else if let Some(r) = u.reads.iter_mut().find(|r| Arc::ptr_eq(&r.queue, queue)) {
            r.seq = r.seq.max(seq);
        } else {
            u.reads.push(new);
        }
        self.busy.store(true, Ordering::Release);
    }

    /// Every pending entry (for a drop that must not free under them).
    fn all(&self) -> Vec<Use> {
        self.conflicts(None, true)
    }
}

/// Makes `queue` (whose submit lock is `seq`) wait for the conflicting work
/// of every tracked buffer of an operation: `(tracker, writes it)`.
pub(crate) fn order_before<'t>(
    queue: &Arc<QueueInner>,
    seq: &mut u64,
    buffers: impl IntoIterator<Item = (&'t Tracker, bool)>,
) -> Result<()> {
    for (t, write) in buffers {
        for u in t.conflicts(Some(queue), write) {
            queue.wait_for_locked(seq, &u.queue, u.seq)?;
        }
    }
    Ok(())
}

/// Memory whose pending work has not finished yet, and how to free it.
struct Grave {
    /// The memory's address (for tests).
    addr: u64,
    uses: Vec<Use>,
    free: Box<dyn FnOnce() + Send>,
}

static GRAVEYARD: Mutex<Vec<Grave>> = Mutex::new(Vec::new());

/// Frees memory through `free` once the tracked work is complete: now if
/// it is, else later (see [`reap`]).
pub(crate) fn free_when_idle(t: &Tracker, addr: u64, free: Box<dyn FnOnce() + Send>) {
    let uses = t.all();
    if uses.is_empty() {
        free();
        return;
    }
    GRAVEYARD.lock().unwrap_or_else(|e| e.into_inner()).push(Grave { addr, uses, free });
}

/// Frees the memory in the graveyard whose work has finished. Called at
/// synchronizations, queue drops and allocations.
pub(crate) fn reap() {
    let ready: Vec<Grave> = {
        let mut g = GRAVEYARD.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_empty() {
            return;
        }
        let mut ready = Vec::new();
        let mut i = 0;
        while i < g.len() {
            g[i].uses.retain(|u| !u.is_done());
            if g[i].uses.is_empty() {
                ready.push(g.swap_remove(i));
            } else {
                i += 1;
            }
        }
        ready
    };
    for grave in ready {
        (grave.free)();
    }
}

/// Whether the memory at `addr` waits in the graveyard (tests).
#[doc(hidden)]
pub fn graveyard_holds(addr: u64) -> bool {
    GRAVEYARD.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|g| g.addr == addr)
}

/// Device memory of one [`DeviceBuffer`](crate::DeviceBuffer), shared with
/// the graphs that use it (see `graph`): freed when the last owner drops
/// it and its pending work has finished. How to free it is its allocator's
/// (`buffer`, through the device's backend), given at [`new`](Self::new).
pub(crate) struct Resource {
    pub(crate) addr: u64,
    /// The device whose memory it is.
    pub(crate) device: Device,
    pub(crate) tracker: Tracker,
    /// Frees the memory; run once, when no work uses it any more.
    free: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Resource {
    /// Memory at `addr` of `device`, which `free` frees.
    pub(crate) fn new(addr: u64, device: Device, free: Box<dyn FnOnce() + Send + Sync>) -> Resource {
        Resource { addr, device, tracker: Tracker::default(), free: Some(free) }
    }
}

impl Drop for Resource {
    fn drop(&mut self) {
        if let Some(free) = self.free.take() {
            free_when_idle(&self.tracker, self.addr, free);
        }
    }
}
