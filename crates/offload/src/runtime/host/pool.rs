//! The host fallback's worker threads: started at the first launch and kept,
//! so that a launch costs a wake-up instead of creating threads, and each
//! worker keeps its coroutine stacks and shared memory from one launch to
//! the next (`hostsim::block::Executor::checkout`).
//!
//! A launch hands one job to every worker and runs it on the calling thread
//! too; it returns when all have finished it. One launch uses the pool at a
//! time; a launch that finds it busy (launches from several host threads or
//! queues at once) starts threads of its own for its duration, as every
//! launch did before the pool existed, so that concurrent kernels still run
//! concurrently.

use std::format;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec::Vec;

/// A job: the worker loop of one launch, its lifetime erased (see
/// [`Pool::run`]).
#[derive(Clone, Copy)]
struct Job(*const (dyn Fn() + Sync + 'static));

// SAFETY: the pointee is `Sync` and is only called (shared) while the
// launch that owns it waits for every worker to finish it.
unsafe impl Send for Job {}

#[derive(Default)]
struct State {
    /// Counts jobs; a worker runs each generation's job once.
    generation: u64,
    job: Option<Job>,
    /// Workers the current job still needs (each worker claims one share).
    unclaimed: usize,
    /// Shares of the current job not finished.
    running: usize,
    /// A launch owns the pool.
    busy: bool,
}

/// The worker threads, `size - 1` of them (the launching thread is the
/// last worker).
pub(crate) struct Pool {
    state: Mutex<State>,
    start: Condvar,
    finished: Condvar,
    /// Worker threads running; fewer than asked if the system refused some.
    workers: Mutex<usize>,
}

impl Pool {
    pub(crate) const fn new() -> Pool {
        Pool {
            state: Mutex::new(State { generation: 0, job: None, unclaimed: 0, running: 0, busy: false }),
            start: Condvar::new(),
            finished: Condvar::new(),
            workers: Mutex::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` on `threads` threads at once (this one included) and
    /// returns when all have returned from it. `work` must not panic (the
    /// launch catches kernel panics itself); if it does, the panic goes to
    /// the thread that ran it and the launch still waits for the others.
    pub(crate) fn run(&'static self, threads: usize, work: &(dyn Fn() + Sync)) {
        if threads <= 1 {
            work();
            return;
        }
        let helpers = threads - 1;
        if self.spawn(helpers) < helpers {
            return scoped(threads, work);
        }
        {
            let mut s = self.lock();
            if s.busy {
                drop(s);
                return scoped(threads, work);
            }
            s.busy = true;
            // SAFETY (of the transmute): only the lifetime is erased; every
            // worker has finished the job before this function returns
            // (`Wait` below, also when `work` panics here).
            let job: *const (dyn Fn() + Sync + 'static) = unsafe { core::mem::transmute(work) };
            s.job = Some(Job(job));
            s.generation += 1;
            s.unclaimed = helpers;
            s.running = helpers;
        }
        self.start.notify_all();
        struct Wait(&'static Pool);
        impl Drop for Wait {
            fn drop(&mut self) {
                let mut s = self.0.lock();
                while s.running > 0 {
                    s = self.0.finished.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                s.job = None;
                s.busy = false;
            }
        }
        let _wait = Wait(self);
        work();
    }

    /// Starts workers until `helpers` run; returns how many run.
    fn spawn(&'static self, helpers: usize) -> usize {
        let mut n = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        while *n < helpers {
            let seen = self.lock().generation;
            let started = std::thread::Builder::new()
                .name(format!("offload-host-{}", *n + 1))
                .spawn(move || self.worker(seen))
                .is_ok();
            if !started {
                break;
            }
            *n += 1;
        }
        *n
    }

    /// A worker: runs its share of each job published after generation
    /// `seen`, if one is left (a launch may need fewer workers than run).
    fn worker(&'static self, mut seen: u64) {
        loop {
            let job = {
                let mut s = self.lock();
                loop {
                    if s.generation != seen {
                        seen = s.generation;
                        if let (Some(job), true) = (s.job, s.unclaimed > 0) {
                            s.unclaimed -= 1;
                            break job;
                        }
                    }
                    s = self.start.wait(s).unwrap_or_else(|e| e.into_inner());
                }
            };
            // SAFETY: the launch that published `job` waits until `running`
            // is back to 0, and this worker's share counts in it.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*job.0)() }));
            let mut s = self.lock();
            s.running -= 1;
            if s.running == 0 {
                self.finished.notify_all();
            }
            drop(s);
            if let Err(payload) = r {
                // A bug of offload (kernel panics are caught per block):
                // report it on this thread's stderr, keep the worker.
                let msg = payload.downcast_ref::<&str>().copied().unwrap_or("(non-string payload)");
                std::eprintln!("offload: bug: a host worker's job panicked: {msg}");
            }
        }
    }
}

/// Runs `work` on `threads` threads started for this call (the pool is
/// busy): the calling thread and `threads - 1` new ones; a thread the
/// system cannot start leaves its share to the others.
fn scoped(threads: usize, work: &(dyn Fn() + Sync)) {
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for _ in 1..threads {
            match std::thread::Builder::new().spawn_scoped(s, work) {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        work();
    });
}
