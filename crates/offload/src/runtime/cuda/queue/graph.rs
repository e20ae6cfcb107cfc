//! CUDA graphs of a queue: stream capture ([`CudaQueue::begin_capture`],
//! [`CudaQueue::end_capture`]) into a [`CapturedGraph`], instantiated as a
//! [`CudaGraph`] and replayed ([`CudaQueue::launch_graph`]).

use cudarc::driver::result;
use cudarc::driver::sys;

use super::super::error::driver_error;
use super::CudaQueue;
use crate::runtime::error::{Error, Result};

/// A captured graph, not instantiated yet (`cuStreamEndCapture`).
pub(crate) struct CapturedGraph {
    raw: sys::CUgraph,
    generation: u64,
    /// The GPU whose context the graph belongs to.
    cuda: &'static super::super::context::Cuda,
}

/// An instantiated graph (`cuGraphInstantiate`) and the graph it came from.
pub(crate) struct CudaGraph {
    exec: sys::CUgraphExec,
    graph: CapturedGraph,
}

// SAFETY: graph handles are used with the context current, as streams.
unsafe impl Send for CudaGraph {}
// SAFETY: as above; launching one exec from several threads is ordered by
// the driver ("each launch is ordered behind ... any previous launches of
// hGraphExec", `cuGraphLaunch`).
unsafe impl Sync for CudaGraph {}
// SAFETY: as above.
unsafe impl Send for CapturedGraph {}

impl CapturedGraph {
    /// `cuGraphInstantiateWithFlags(graph, 0)`.
    pub(crate) fn instantiate(self) -> Result<CudaGraph> {
        self.cuda.make_current()?;
        // SAFETY: `raw` is a graph of the current context from
        // `cuStreamEndCapture`.
        let exec = unsafe { result::graph::instantiate(self.raw, sys::CUgraphInstantiate_flags(0)) }
            .map_err(|e| driver_error("cuGraphInstantiate", None, e))?;
        Ok(CudaGraph { exec, graph: self })
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        if let Some(_st) = self.cuda.lock_generation(self.generation) {
            // SAFETY: from `cuStreamEndCapture`, destroyed once; its exec (if
            // any) is destroyed first (field order of `CudaGraph`'s drop).
            let _ = unsafe { result::graph::destroy(self.raw) };
        }
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        if let Some(_st) = self.graph.cuda.lock_generation(self.graph.generation) {
            // SAFETY: from `cuGraphInstantiate`, destroyed once; `Graph`'s
            // drop waited for its replays.
            let _ = unsafe { result::graph::exec_destroy(self.exec) };
        }
    }
}

impl CudaQueue {
    /// Starts capturing the stream (`cuStreamBeginCapture`, thread-local
    /// mode: other threads may keep calling the driver, this one may not
    /// synchronize; the caller holds the submit lock).
    pub(crate) fn begin_capture(&self) -> Result<()> {
        let stream = self.stream()?;
        // SAFETY: a stream of the current context, not being captured (the
        // queue's capture state said so under the submit lock).
        unsafe { result::stream::begin_capture(stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) }
            .map_err(|e| driver_error("cuStreamBeginCapture", None, e))
    }

    /// Ends the capture (`cuStreamEndCapture`); the caller holds the submit
    /// lock. An error if something in the capture was invalid (then CUDA
    /// has ended the capture anyway).
    pub(crate) fn end_capture(&self) -> Result<CapturedGraph> {
        let stream = self.stream()?;
        // SAFETY: the stream is being captured (`begin_capture`).
        let raw =
            unsafe { result::stream::end_capture(stream) }.map_err(|e| driver_error("cuStreamEndCapture", None, e))?;
        if raw.is_null() {
            return Err(Error::from(crate::error::Queue {
                op: "capture a graph",
                reason: "the driver returned no graph".into(),
            }));
        }
        Ok(CapturedGraph { raw, generation: self.cuda.generation(), cuda: self.cuda })
    }

    /// Enqueues a replay (`cuGraphLaunch`); the caller holds the submit lock.
    pub(crate) fn launch_graph(&self, g: &CudaGraph) -> Result<()> {
        if g.graph.generation != self.cuda.generation() {
            return Err(Error::from(crate::error::Queue {
                op: "launch a graph",
                reason: "the CUDA context was rebuilt after a fault since the graph was captured; capture it again"
                    .into(),
            }));
        }
        let stream = self.stream()?;
        // SAFETY: an exec of the current context; the memory its nodes use
        // is kept alive by the graph (`queue::graph`).
        unsafe { result::graph::launch(g.exec, stream) }.map_err(|e| driver_error("cuGraphLaunch", None, e))
    }
}
