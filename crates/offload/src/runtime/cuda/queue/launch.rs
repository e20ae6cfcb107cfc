//! Launches in a queue's stream: `cuLaunchKernel` with no wait, the
//! parameters built as the blocking path builds them (the driver copies
//! them at the call, CUDA Driver API, `cuLaunchKernel`); host memory (only
//! in a scope) goes through the scope's device copies (`scope`).

use core::ffi::c_void;
use std::format;
use std::sync::Mutex;

use cudarc::driver::result::{self, DriverError};

use super::super::context::Cuda;
use super::super::error::driver_error;
use super::scope::ScopeCopies;
use super::{CudaQueue, Scratch};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernel::KernelInfo;
use crate::runtime::spec::{ArgKind, ArgSpec};
use crate::LaunchConfig;

impl CudaQueue {
    /// Enqueues a launch of `kernel` (the caller holds the queue's submit
    /// lock). Host memory arguments (only in a scope, whose device copies
    /// are `scope`) are copied to device memory of the scope first, and back
    /// at the scope's end.
    pub(crate) fn launch(
        &self,
        cuda: &Cuda,
        kernel: &'static KernelInfo,
        cfg: &LaunchConfig,
        args: &[ArgSpec<'_>],
        scope: Option<&Mutex<ScopeCopies>>,
    ) -> Result<()> {
        let err = |op: &'static str, e: DriverError| driver_error(op, Some(&kernel.path()), e);
        // One context switch per launch: `prepare` makes the context current.
        let f = cuda.prepare(kernel, cfg.shared_mem_bytes)?;
        let stream = self.stream_in_current()?;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let Scratch { slots, params } = &mut *scratch;
        slots.clear();
        params.clear();
        // The scalars: a device pointer per slice (and its length if the
        // entry point takes it).
        for a in args {
            let (d, len, pass_len) = match a.kind {
                ArgKind::Value { .. } => continue,
                ArgKind::Host { ptr, bytes, atomic, writeback, len, pass_len } if bytes > 0 => {
                    let Some(scope) = scope else {
                        return Err(Error::from(crate::error::Queue {
                            op: "enqueue a launch",
                            reason: format!("kernel `{}` got host memory outside a scope", kernel.path()),
                        }));
                    };
                    let mut copies = scope.lock().unwrap_or_else(|e| e.into_inner());
                    // SAFETY: `ptr` is valid for `bytes` until the scope
                    // ends (the scope's borrow); the context is current; the
                    // stream is not being captured (a scope's launch on a
                    // queue being captured is refused before, in
                    // `queue::enqueue`).
                    let d = unsafe { copies.upload(self.cuda, stream, ptr, bytes, writeback, atomic) }
                        .map_err(|(op, e)| err(op, e))?;
                    (d, len, pass_len)
                }
                ArgKind::Host { ptr, len, pass_len, .. } => (ptr as u64, len, pass_len),
                ArgKind::Resident { addr, len, pass_len, .. } => (addr, len, pass_len),
            };
            slots.push(d);
            if pass_len {
                slots.push(len as u64);
            }
        }
        // The parameters, in the entry point's order. `slots` is complete
        // and not resized any more, so pointers into it stay valid.
        let base = slots.as_mut_ptr();
        let mut next = 0;
        for a in args {
            match a.kind {
                ArgKind::Value { ptr } => params.push(ptr as *mut c_void),
                ArgKind::Host { pass_len, .. } | ArgKind::Resident { pass_len, .. } => {
                    let n = if pass_len { 2 } else { 1 };
                    for _ in 0..n {
                        params.push(base.wrapping_add(next) as *mut c_void);
                        next += 1;
                    }
                }
            }
        }
        let mut shape = crate::device::thread::launch_shape(cfg.block, cfg.grid);
        params.push(&mut shape as *mut u32 as *mut c_void);
        let (g, b) = (cfg.grid, cfg.block);
        // SAFETY: `f` belongs to the loaded module of the current context;
        // `params` has one pointer per parameter of the entry point made
        // from the same signature (as in the blocking path), each valid for
        // the call, which copies them ("kernelParams ... are copied at the
        // time of the call", `cuLaunchKernel`); every device address is
        // memory that stays allocated until the launch has finished
        // (tracked buffers, or the scope's copies); the pointers into
        // `slots` are in bounds (`next` ends at `slots.len()`).
        unsafe { result::launch_kernel(f, (g.x, g.y, g.z), (b.x, b.y, b.z), cfg.shared_mem_bytes, stream, params) }
            .map_err(|e| err("cuLaunchKernel", e))
    }
}
