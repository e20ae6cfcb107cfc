//! Graphs: a sequence of queued launches and device copies, captured once
//! (`cuStreamBeginCapture` … `cuStreamEndCapture`, `cuGraphInstantiate`)
//! and replayed with one call (`cuGraphLaunch`). On the host fallback the
//! graph is the recorded list of operations, which a replay enqueues. What
//! a capture collects, and how replays are ordered with other work on their
//! buffers, is `capture`'s.

use std::boxed::Box;
use std::string::String;
use std::sync::{Arc, Mutex};
use std::vec::Vec;

use super::capture::{self, refuse_in_capture, HostOp};
use super::track::{self, Resource, Use};
use super::{Imp, Queue, QueueInner};
use crate::runtime::cuda::queue::graph::CudaGraph;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernel::KernelInfo;
use crate::{DeviceBuffer, DeviceCopy};

/// What [`Queue::capture`] hands its closure: enqueue on it as on a bare
/// queue (`kernel::on(g, …)` with values and [`DeviceBuffer`]s,
/// [`memcpy_dtod`](Self::memcpy_dtod)); nothing runs until the graph is
/// launched.
pub struct Capture<'q> {
    queue: &'q Queue,
}

impl Capture<'_> {
    pub(crate) fn queue(&self) -> &Arc<QueueInner> {
        &self.queue.inner
    }

    /// Captures a copy of `src` into `dst` (`cuMemcpyDtoDAsync`).
    ///
    /// # Errors
    /// As [`Queue::memcpy_dtod`].
    pub fn memcpy_dtod<T: DeviceCopy>(&self, src: &DeviceBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        self.queue.memcpy_dtod(src, dst)
    }
}

impl core::fmt::Debug for Capture<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Capture").field("queue", &self.queue).finish()
    }
}

/// A captured sequence of launches and device copies; replay it with
/// [`launch`](Self::launch). See [`Queue::capture`].
pub struct Graph {
    imp: GraphImp,
    /// The device of the queue it was captured on: it replays there only.
    device: crate::runtime::device::Device,
    kernels: Vec<&'static KernelInfo>,
    /// The device memory it uses (kept alive) and whether it writes it.
    buffers: Vec<(Arc<Resource>, bool)>,
    /// Replays not known to be finished.
    replays: Mutex<Vec<Use>>,
}

enum GraphImp {
    Host(Arc<[HostOp]>),
    Cuda(CudaGraph),
}

impl Queue {
    /// Captures the launches and device copies that `f` enqueues on the
    /// [`Capture`] it gets, without running them, into a [`Graph`]
    /// (`cuStreamBeginCapture` in `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`,
    /// `cuStreamEndCapture`, `cuGraphInstantiate`).
    ///
    /// ```ignore
    /// let graph = q.capture(|g| {
    ///     jacobi::on(g, cfg, &a, &mut b)?;
    ///     jacobi::on(g, cfg, &b, &mut a)?;
    ///     Ok(())
    /// })?;
    /// for _ in 0..250 { graph.launch(&q)?; }
    /// ```
    ///
    /// The graph replays exactly what was captured: the same values and
    /// the same buffers (to run with others, capture another graph). It
    /// keeps the memory of its buffers alive: a `DeviceBuffer` dropped
    /// before the graph is freed after the graph.
    ///
    /// # Errors
    /// `f`'s error (nothing is kept); [`Error::Queue`] if the queue is
    /// already being captured or inside `f` for what a capture cannot hold
    /// (host memory, synchronizations, blocking launches and copies);
    /// [`Error::Driver`] if capturing or instantiating fails.
    pub fn capture(&self, f: impl FnOnce(&Capture<'_>) -> Result<()>) -> Result<Graph> {
        refuse_in_capture(&self.inner, "capture a graph")?;
        {
            let seq = self.inner.lock_submit();
            if capture::is_capturing(&self.inner) {
                return Err(Error::from(crate::error::Queue {
                    op: "capture a graph",
                    reason: "the queue is already being captured".into(),
                }));
            }
            if let Imp::Cuda(c) = &self.inner.imp {
                // A fence for the work before the capture: nothing can be
                // recorded on the stream for it while it is captured (an
                // event recorded then would be a node of the graph).
                if !self.inner.progress.is_done(*seq) {
                    c.fence(&self.inner.progress, *seq)?;
                }
            }
            capture::begin(&self.inner);
            if let Imp::Cuda(c) = &self.inner.imp {
                if let Err(e) = c.begin_capture() {
                    capture::end(&self.inner);
                    return Err(e);
                }
            }
        }
        capture::set_thread_capturing(true);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&Capture { queue: self })));
        capture::set_thread_capturing(false);
        let state = capture::end(&self.inner);
        let ended = match &self.inner.imp {
            Imp::Cuda(c) => {
                let _seq = self.inner.lock_submit();
                c.end_capture().map(Some)
            }
            Imp::Host(_) => Ok(None),
        };
        let result = match result {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(r) => r,
        };
        let graph = ended?;
        result?;
        let imp = match graph {
            Some(g) => GraphImp::Cuda(g.instantiate()?),
            None => GraphImp::Host(state.host_ops.into()),
        };
        Ok(Graph {
            imp,
            device: self.inner.device,
            kernels: state.kernels,
            buffers: state.buffers,
            replays: Mutex::new(Vec::new()),
        })
    }
}

impl Graph {
    /// Enqueues one replay of the graph on `q` (`cuGraphLaunch`; host
    /// fallback: its operations, in order). Returns at once. Ordered with
    /// the pending work of its buffers like a launch; host access to them
    /// waits for it; errors arrive at `q`'s next synchronization, naming the
    /// graph's kernels.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuGraphLaunch` fails; [`Error::Queue`] inside
    /// a capture, or on a queue of another device than the one captured.
    pub fn launch(&self, q: &Queue) -> Result<()> {
        refuse_in_capture(&q.inner, "launch a graph")?;
        if q.inner.device != self.device {
            return Err(Error::from(crate::error::Queue {
                op: "launch a graph",
                reason: std::format!(
                    "the graph was captured on a queue of {}, and replays only there, not on {}: capture it again on \
                     a queue of {}",
                    self.device,
                    q.inner.device,
                    q.inner.device
                ),
            }));
        }
        let _replays = capture::hold_exclusive();
        let queue = &q.inner;
        let mut seq = queue.lock_submit();
        let buffers: Vec<(&track::Tracker, bool)> = self.buffers.iter().map(|(r, w)| (&r.tracker, *w)).collect();
        track::order_before(queue, &mut seq, buffers.iter().copied())?;
        match (&queue.imp, &self.imp) {
            (Imp::Host(h), GraphImp::Host(ops)) => {
                let ops = ops.clone();
                *seq += 1;
                h.send(
                    *seq,
                    Box::new(move || {
                        let mut first = Ok(());
                        for op in ops.iter() {
                            let r = op();
                            if first.is_ok() {
                                first = r;
                            }
                        }
                        first
                    }),
                );
            }
            (Imp::Cuda(c), GraphImp::Cuda(g)) => {
                // Before and after the launch, as for a kernel (`enqueue`).
                for k in &self.kernels {
                    c.note_kernel(queue.id, k);
                }
                c.launch_graph(g)?;
                *seq += 1;
                for k in &self.kernels {
                    c.note_kernel(queue.id, k);
                }
            }
            _ => unreachable!("a graph replays on a queue of the device it was captured on"),
        }
        for (t, write) in buffers {
            t.record(queue, *seq, write);
        }
        // One entry per queue: a queue runs its replays in order, so its
        // latest covers the earlier ones. (An entry per replay made every
        // launch check all the replays not known to be finished, a lock
        // each on CUDA: quadratic in the replays between synchronizations.)
        let mut replays = self.replays.lock().unwrap_or_else(|e| e.into_inner());
        match replays.iter_mut().find(|u| Arc::ptr_eq(&u.queue, queue)) {
            Some(u) => u.seq = *seq,
            None => {
                replays.retain(|u| !u.queue.is_done(u.seq));
                replays.push(Use { queue: queue.clone(), seq: *seq });
            }
        }
        Ok(())
    }

    /// How many replays the graph's drop would wait for (tests).
    #[doc(hidden)]
    pub fn pending_replays(&self) -> usize {
        self.replays.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The kernels the graph launches, as paths (`app::jacobi`).
    pub fn kernels(&self) -> Vec<String> {
        self.kernels.iter().map(|k| k.path()).collect()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        for u in self.replays.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            u.queue.wait_host(u.seq);
        }
    }
}

impl core::fmt::Debug for Graph {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Graph").field("kernels", &self.kernels()).field("buffers", &self.buffers.len()).finish()
    }
}
