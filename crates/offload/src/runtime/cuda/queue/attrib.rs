//! Which queue a GPU panic belongs to. A context has one panic record (see
//! `panic_record`), written by the first panicking thread of any kernel of
//! any queue; every wait of a queue, and every blocking launch, takes what
//! it finds there. Kernels of several queues may run at once, so the check
//! that finds a record need not be the panicking kernel's.
//!
//! The record holds the panic's location (`core::panic::Location`: file
//! and line), and every kernel's [`KernelInfo`] holds its lines
//! ([`KernelInfo::contains`]). The kernels that may have written the record
//! are the unchecked ones: each queue's launches since its last check, and
//! the kernel of the blocking launch in flight, if any (noted under the
//! reserved queue id [`BLOCKING`] from just before its `cuLaunchKernel`
//! until its launch has read the record: a queue's check may run while it
//! does, since it takes only the panic lock, never the state's). Of those,
//! the ones whose lines contain the location are the writers
//! ([`attribute`]):
//!
//! - only the checking queue's (or the blocking launch's): its error,
//!   naming that kernel (or, where several contain it, "one of" them);
//! - only other queues' (or the blocking launch's in flight): not this
//!   check's. The record is taken off the device anyway (so that later
//!   panics can be recorded) and kept here, host-side, for those queues:
//!   the next check of one of them reports it ([`Unchecked::check`]); the
//!   blocking launch's own check, once its kernel has finished, reports
//!   one kept for [`BLOCKING`];
//! - none (the panic is in a function the kernel calls, written outside
//!   it, or a stack overflow, whose record has no line): the checking
//!   queue's error, naming every unchecked kernel as a candidate, as
//!   before kernels had lines ([`Verdict::Unplaced`]) — unless a blocking
//!   launch is in flight: then it is kept for that launch, whose check
//!   reports it the same way.
//!
//! While a blocking launch is in flight, a queue's check thus decides as
//! that launch's check would: before queue checks stopped taking the
//! state's lock they waited for the blocking launch, which checked first.
//!
//! So a panic written in a kernel's own body is reported on the queue that
//! launched that kernel, unless the same kernel is unchecked on several
//! queues (then on the first of them checked). A record kept for queues
//! none of which has unchecked launches left (their launches were dropped
//! by a fault's report) goes to the next check of any queue, as before.

use std::format;
use std::string::String;
use std::vec::Vec;

use crate::runtime::cuda::recover::Recorded;
use crate::runtime::kernel::KernelInfo;

/// What a check does with a panic record it found ([`attribute`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Report it here, as the error of this kernel: `app::k`, or
    /// "one of `app::a`, `app::b`".
    Take(String),
    /// A kernel of another queue wrote it: keep it for that queue.
    Leave,
    /// No candidate's lines contain it: whoever checks reports it, naming
    /// every candidate (this string), unless a blocking launch is in
    /// flight, which then gets it ([`Unchecked::check`]).
    Unplaced(String),
}

/// The decision for a record at `file:line` found by a check whose own
/// unchecked kernels are `this` (a queue's launches since its last check;
/// the blocking launch's kernel), while `others` (other queues' unchecked
/// launches, and the blocking launch in flight, if any) may still run. See
/// the module docs.
pub(crate) fn attribute(at: (&str, u32), this: &[&'static KernelInfo], others: &[&'static KernelInfo]) -> Verdict {
    let inside = |k: &&&'static KernelInfo| k.contains(at.0, at.1);
    let mine: Vec<&&'static KernelInfo> = this.iter().filter(inside).collect();
    let theirs: Vec<&&'static KernelInfo> = others.iter().filter(inside).collect();
    match (mine.is_empty(), theirs.is_empty()) {
        (true, false) => Verdict::Leave,
        (false, _) => Verdict::Take(spell(mine.into_iter().chain(theirs))),
        (true, true) => Verdict::Unplaced(spell(this.iter().chain(others))),
    }
}

/// The kernels' paths for an error's `kernel` field, each once, in order:
/// `app::k`, "one of `app::a`, `app::b`", or a placeholder if none.
fn spell<'a>(kernels: impl Iterator<Item = &'a &'static KernelInfo>) -> String {
    let mut names: Vec<String> = Vec::new();
    for k in kernels {
        let p = k.path();
        if !names.contains(&p) {
            names.push(p);
        }
    }
    match names.len() {
        0 => String::from("<a kernel of another queue or launch>"),
        1 => names.pop().unwrap_or_default(),
        _ => format!("one of {}", names.join(", ")),
    }
}

/// The queue id under which the blocking launch in flight notes its kernel
/// ([`Unchecked::note`]): queue ids count up from 1
/// (`runtime::queue::handle`), never reaching it. A GPU has at most one
/// blocking launch in flight (they hold its state's lock).
pub(crate) const BLOCKING: u64 = u64::MAX;

/// Who checks the record: a queue (by id) after a wait, or the blocking
/// launch in flight (its kernel noted under [`BLOCKING`]) after its own
/// synchronize.
#[derive(Clone, Copy)]
pub(crate) enum Checker {
    Queue(u64),
    Blocking,
}

impl Checker {
    /// The id the checker's kernels are noted under.
    fn id(self) -> u64 {
        match self {
            Checker::Queue(q) => q,
            Checker::Blocking => BLOCKING,
        }
    }
}

/// A GPU's unchecked queued launches and the records kept for queues (one
/// per GPU, in `Cuda::panics`, behind the panic lock; see the module docs).
#[derive(Default)]
pub(crate) struct Unchecked {
    /// `(queue id, kernel)`: launched, not yet checked; each pair once.
    launches: Vec<(u64, &'static KernelInfo)>,
    /// Records taken off the device for other queues than the check's.
    kept: Vec<Kept>,
}

/// A record kept for the queues `owners` (those whose unchecked kernels
/// contained its location), with the kernel it names.
struct Kept {
    owners: Vec<u64>,
    kernel: String,
    record: Recorded,
}

impl Unchecked {
    /// Notes a launch of `kernel` on `queue` ([`BLOCKING`]: the blocking
    /// launch about to run it; once per pair).
    pub(crate) fn note(&mut self, queue: u64, kernel: &'static KernelInfo) {
        if !self.launches.iter().any(|&(q, k)| q == queue && core::ptr::eq(k, kernel)) {
            self.launches.push((queue, kernel));
        }
    }

    /// After `queue` failed with a driver fault: its launches, now checked
    /// (removed), and the others', spelled as candidates for the fault's
    /// error (which comes with the device's record, if any, unattributed).
    pub(crate) fn take_names(&mut self, queue: u64) -> String {
        let this: Vec<&'static KernelInfo> =
            self.launches.iter().filter(|(q, _)| *q == queue).map(|&(_, k)| k).collect();
        self.launches.retain(|(q, _)| *q != queue);
        spell(this.iter().chain(self.launches.iter().map(|(_, k)| k)))
    }

    /// A check by `checker` after its wait, with `found`, the record just
    /// taken off the device (if any): the record to report here and the
    /// kernel it names, if any. A queue's launches are checked (removed)
    /// by this. The caller holds the lock across taking `found` off the
    /// device and this call, so that no other check sees the same
    /// launches meanwhile.
    ///
    /// A queue's check reports, in this order: a kept record of its own
    /// (the oldest), `found` if [`attribute`] gives it to this queue, or a
    /// kept record none of whose queues has unchecked launches left; only
    /// the first, as a queue keeps only its first error (the others of
    /// its own are dropped; the ones of no queue stay for the next check).
    /// The blocking launch reports a record kept for it (a queue's check
    /// found it while its kernel ran) or `found`, if it is its own; its
    /// kernel is checked (removed) by this.
    pub(crate) fn check(&mut self, checker: Checker, found: Option<Recorded>) -> Option<(String, Recorded)> {
        // Nothing allocates unless a record was found (a blocking launch
        // allocates nothing when it succeeds).
        let q = checker.id();
        let this: Vec<&'static KernelInfo> = match found {
            None => Vec::new(),
            Some(_) => self.launches.iter().filter(|(o, _)| *o == q).map(|&(_, k)| k).collect(),
        };
        self.launches.retain(|(o, _)| *o != q);
        let mut report = found.and_then(|r| self.sort(r, &this));
        if let Some(i) = self.kept.iter().position(|k| k.owners.contains(&q)) {
            let kept = self.kept.remove(i);
            self.kept.retain(|k| !k.owners.contains(&q));
            report = Some((kept.kernel, kept.record));
        }
        if report.is_none() && matches!(checker, Checker::Queue(_)) {
            let gone = |k: &Kept| !k.owners.iter().any(|o| self.launches.iter().any(|(q, _)| q == o));
            if let Some(i) = self.kept.iter().position(gone) {
                let kept = self.kept.remove(i);
                report = Some((kept.kernel, kept.record));
            }
        }
        report
    }

    /// After a blocking launch that did not get to its check (its
    /// `cuLaunchKernel` or its kernel failed): its kernel is no candidate
    /// any more, and no record is kept for it. A record kept for it and for
    /// queues stays theirs.
    pub(crate) fn forget(&mut self, queue: u64) {
        self.launches.retain(|(q, _)| *q != queue);
        for k in &mut self.kept {
            k.owners.retain(|&o| o != queue);
        }
        self.kept.retain(|k| !k.owners.is_empty());
    }

    /// `found` for a check whose own kernels are `this` (already removed
    /// from `launches`): returned if it is the check's, else kept for the
    /// queues whose unchecked kernels contain its location, or for the
    /// blocking launch in flight if none does (not if a record for the
    /// same queues is already kept: each queue reports only its first
    /// error).
    fn sort(&mut self, found: Recorded, this: &[&'static KernelInfo]) -> Option<(String, Recorded)> {
        let others: Vec<&'static KernelInfo> = self.launches.iter().map(|&(_, k)| k).collect();
        let (file, line) = found.location();
        let (owners, kernel) = match attribute((file, line), this, &others) {
            Verdict::Take(kernel) => return Some((kernel, found)),
            Verdict::Unplaced(kernel) if self.launches.iter().any(|&(q, _)| q == BLOCKING) => {
                (std::vec![BLOCKING], kernel)
            }
            Verdict::Unplaced(kernel) => return Some((kernel, found)),
            Verdict::Leave => {
                let inside = self.launches.iter().filter(|(_, k)| k.contains(file, line));
                let mut owners: Vec<u64> = inside.map(|&(q, _)| q).collect();
                owners.sort_unstable();
                owners.dedup();
                let theirs = self.launches.iter().filter(|(q, k)| owners.contains(q) && k.contains(file, line));
                let kernel = spell(theirs.map(|(_, k)| k));
                (owners, kernel)
            }
        };
        if !self.kept.iter().any(|k| k.owners == owners) {
            self.kept.push(Kept { owners, kernel, record: found });
        }
        None
    }
}

#[cfg(test)]
#[path = "attrib_tests.rs"]
mod tests;
