//! A GPU's panic record and the attribution of what it finds there
//! ([`Panics`]), behind a lock of their own (`Cuda::panics`): a queue's
//! wait (`Queue::synchronize`, `Event::synchronize`, a future's poll) reads
//! the record without the state's lock, which a blocking launch holds
//! until its kernel has finished, so that it never waits for another
//! thread's blocking kernel. Nothing here waits for a kernel: the lock is
//! held to read host memory and, only when a record was found, to reset
//! the claim word in the record's own stream (`PanicSlot::take`).
//!
//! The blocking launch in flight notes its kernel here before its
//! `cuLaunchKernel` ([`InFlight`]), so that a queue's check meanwhile
//! counts it as a candidate (`queue::attrib`), and checks the record only
//! after its kernel has finished. Lock order: see `context`.

use std::string::String;
use std::sync::{Mutex, MutexGuard};

use super::queue::attrib::{Checker, Unchecked, BLOCKING};
use super::recover::{PanicSlot, Recorded};
use crate::runtime::kernel::KernelInfo;

/// The context's panic record and who may have written it.
pub(crate) struct Panics {
    /// The record of the context now in use; `None` while a rebuild
    /// resets the context (the old record is freed with it), or where the
    /// image has none (see [`PanicSlot::install`]).
    pub(super) slot: Option<PanicSlot>,
    /// `CU_LIMIT_STACK_SIZE` of the context, for stack-overflow errors.
    pub(super) stack_bytes: usize,
    /// Unchecked launches and records kept for queues (see `attrib`).
    pub(super) unchecked: Unchecked,
}

// SAFETY: the slot's pointers are page-locked host memory and a stream of
// the context, usable from any thread (CUDA Driver API, "Context
// Management"); every use is behind `Cuda::panics`' lock with the context
// current.
unsafe impl Send for Panics {}

impl Panics {
    pub(super) fn new(slot: Option<PanicSlot>, stack_bytes: usize) -> Panics {
        Panics { slot, stack_bytes, unchecked: Unchecked::default() }
    }

    /// Takes the record off the device, if there is one, and attributes it
    /// ([`Unchecked::check`]): the record `checker` reports and the kernel
    /// it names. The context is current on this thread (the caller's).
    pub(super) fn check(&mut self, checker: Checker) -> Option<(String, Recorded)> {
        let found = self.slot.as_ref().and_then(PanicSlot::take);
        self.unchecked.check(checker, found)
    }
}

/// Locks `panics`, whatever a panicking holder left behind (the state
/// behind it is consistent between calls).
pub(super) fn lock(panics: &Mutex<Panics>) -> MutexGuard<'_, Panics> {
    panics.lock().unwrap_or_else(|e| e.into_inner())
}

/// A blocking launch's kernel while it may run: noted under [`BLOCKING`]
/// from [`begin`](Self::begin), just before its `cuLaunchKernel`, until
/// its [`check`](Self::check) after the kernel has finished, or until this
/// is dropped on a path that never checks (the launch or the kernel
/// failed; `Unchecked::forget`). Made and dropped with the state's lock
/// held, so one at a time per GPU.
pub(super) struct InFlight<'a> {
    panics: &'a Mutex<Panics>,
}

impl<'a> InFlight<'a> {
    pub(super) fn begin(panics: &'a Mutex<Panics>, kernel: &'static KernelInfo) -> InFlight<'a> {
        lock(panics).unchecked.note(BLOCKING, kernel);
        InFlight { panics }
    }

    /// After the kernel has finished: the panic it recorded (or that a
    /// queue's check kept for it), with the kernel named, and the
    /// context's stack size for the error.
    pub(super) fn check(self) -> (Option<(String, Recorded)>, usize) {
        let found = {
            let mut p = lock(self.panics);
            (p.check(Checker::Blocking), p.stack_bytes)
        };
        // `self` drops here, the lock released.
        found
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // After `check` the kernel is gone already: this finds nothing.
        lock(self.panics).unchecked.forget(BLOCKING);
    }
}
