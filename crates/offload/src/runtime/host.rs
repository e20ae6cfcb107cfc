//! The host fallback: runs a kernel's body on the CPU with the GPU's
//! semantics (the role of LLVM offload's host plugin,
//! `offload/plugins-nextgen/host/src/rtl.cpp`).
//!
//! Blocks are independent in CUDA (no ordering or communication between
//! blocks within a launch), so they are spread over worker threads; the
//! threads of a block run on one worker as coroutines that switch only at
//! `sync_threads` and warp collectives (see `hostsim`), each seeing its own
//! `threadIdx`/`blockIdx` through the thread context. Arguments need no
//! copies: the body works on the caller's memory directly, through the same
//! `&[T]` and `DisjointSlice` views as on the GPU.
//!
//! `OFFLOAD_HOST_THREADS` sets the number of workers (default: the CPUs),
//! `OFFLOAD_HOST_STACK_KIB` the stack of each simulated GPU thread (default
//! 256 KiB, from [`MIN_STACK_KIB`] to [`MAX_STACK_KIB`]; reserved lazily):
//! far more than the GPU's 8 KiB (`OFFLOAD_CUDA_STACK_BYTES`), because host
//! frames, unoptimized ones above all, are larger than the GPU's. A stack
//! the system cannot allocate fails the launch with [`Error::Memory`].
//!
//! A panic in the body ends the panicking simulated GPU thread, as a
//! panicking GPU thread exits; every other thread of the launch runs to its
//! end (`hostsim::threads`), then the launcher returns
//! [`Error::KernelPanic`] with the message, location, block and thread of
//! the first panic recorded, and later launches run normally. A thread that overflows its stack stops the
//! launch with [`Error::StackOverflow`] (see `stack_guard`), and later
//! launches run normally too.

use std::format;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::vec::Vec;

use super::backend::Backend;
use super::info::{BackendInfo, BackendKind};
use super::{images, limits};
use crate::device::config::LaunchConfig;
use crate::device::dim::Dim3;
use crate::device::thread::{ThreadCtx, CTX};
use crate::hostsim::block::Executor;
use crate::hostsim::failure::{self, Abort, BlockFailure, PanicRecord};
use crate::hostsim::stack_guard::{self, KernelName};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernel::KernelInfo;
use crate::runtime::spec::ArgSpec;

mod claims;
mod pool;

use claims::Claims;

/// The smallest `OFFLOAD_HOST_STACK_KIB`: the runtime's own calls from a
/// simulated thread need 32 KiB (`stack_guard::MARGIN`) besides the
/// kernel's frames.
pub(crate) const MIN_STACK_KIB: usize = 64;
/// The largest `OFFLOAD_HOST_STACK_KIB`, 1 GiB: a GPU thread has at most
/// 512 KiB of local memory (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability"), host frames are larger, and the
/// host fallback reserves one such stack per thread of a block that waits
/// at a barrier or warp collective at the same time.
pub(crate) const MAX_STACK_KIB: usize = 1 << 20;

pub(crate) struct Host {
    info: BackendInfo,
    workers: usize,
    stack_size: usize,
    /// Shared memory per block, and where that limit comes from (see
    /// `limits::host_shared_limit`).
    shared_limit: (u32, String),
}

impl Host {
    pub(crate) fn new() -> Self {
        let setting = std::env::var("OFFLOAD_HOST_THREADS").ok();
        let workers = setting.as_deref().and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0);
        if let (Some(v), None) = (&setting, workers) {
            std::eprintln!(
                "offload: warning: OFFLOAD_HOST_THREADS={v:?} is not a positive number of threads; using one per CPU"
            );
        }
        let workers = workers.or_else(|| std::thread::available_parallelism().ok().map(|n| n.get())).unwrap_or(1);
        let setting = std::env::var("OFFLOAD_HOST_STACK_KIB").ok();
        let kib = setting
            .as_deref()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| (MIN_STACK_KIB..=MAX_STACK_KIB).contains(n));
        if let (Some(v), None) = (&setting, kib) {
            std::eprintln!(
                "offload: warning: OFFLOAD_HOST_STACK_KIB={v:?} is not a stack size from {MIN_STACK_KIB} to \
                 {MAX_STACK_KIB} (KiB); using 256"
            );
        }
        let stack_size = kib.unwrap_or(256) * 1024;
        // The host runs no image, but takes the shared-memory limit from the
        // architectures the images were built for (and a corrupted image or
        // a damaged section means a damaged binary: `embedded` says so, once).
        let arches: Vec<(offload_image::ImageKind, &str)> =
            images::embedded().intact.iter().map(|i| (i.kind, i.arch)).collect();
        let shared_limit = limits::host_shared_limit(arches);
        let description = format!("host CPU fallback, {workers} worker thread(s)");
        let info = BackendInfo {
            kind: BackendKind::Host,
            description,
            multiprocessors: workers as u32,
            shared_memory_per_block: shared_limit.0,
        };
        Host { info, workers, stack_size, shared_limit }
    }
}

/// Held shared by every launch of the host fallback while its kernel runs,
/// exclusively by `DeviceGlobal::read`/`write`, so that host code never
/// copies a device global while kernels use it.
pub(crate) static LAUNCHES: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Whether this OS thread is running a kernel body of the host fallback.
pub(crate) fn in_host_kernel() -> bool {
    IN_KERNEL.with(|k| k.get())
}

std::thread_local! {
    static IN_KERNEL: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Installs (once) a panic hook that records panics raised inside kernel
/// bodies (on a simulated GPU thread) instead of printing them, and defers
/// to the previous hook for every other panic, the runtime's own on a
/// worker thread included, so that none is swallowed.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(std::boxed::Box::new(move |info| {
            if IN_KERNEL.with(|k| k.get()) && stack_guard::in_simulated_thread() {
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "Box<dyn Any>".into());
                let location = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                    .unwrap_or_else(|| "<unknown>".into());
                if cfg!(panic = "abort") {
                    // No unwinding: the launcher will never see this panic.
                    // Say what happened before the process aborts.
                    let ctx = CTX.with(|c| c.get());
                    std::eprintln!(
                        "offload: a kernel panicked on the host fallback at {location} (block {}, thread {}): {message}\n\
                         offload: this profile sets panic = \"abort\", so the process aborts instead of the launcher \
                         returning offload::Error::KernelPanic; use panic = \"unwind\" (Rust's default) to get the error",
                        fmt3(ctx.block),
                        fmt3(ctx.thread)
                    );
                }
                failure::record_panic(PanicRecord { message, location });
            } else {
                previous(info);
            }
        }));
    });
}

fn unlinear(i: u64, d: Dim3) -> Dim3 {
    let x = (i % d.x as u64) as u32;
    let y = ((i / d.x as u64) % d.y as u64) as u32;
    let z = (i / (d.x as u64 * d.y as u64)) as u32;
    Dim3 { x, y, z }
}

/// Restores the single-thread context when a worker leaves a kernel, also
/// when the body panicked.
struct CtxGuard;

impl Drop for CtxGuard {
    fn drop(&mut self) {
        CTX.with(|c| c.set(ThreadCtx::SINGLE));
        IN_KERNEL.with(|k| k.set(false));
        stack_guard::set_kernel(None);
    }
}

fn fmt3(d: Dim3) -> String {
    format!("({}, {}, {})", d.x, d.y, d.z)
}

impl Host {
    /// What a launch checks before it runs anything: not from inside a
    /// kernel body, and dynamic shared memory within the limit. A queued
    /// launch checks it when enqueued, so that the error is the caller's,
    /// as on the GPU.
    pub(crate) fn check_launch(&self, kernel: &'static KernelInfo, cfg: &LaunchConfig) -> Result<()> {
        // Host-only code in a kernel body (`cfg(not(offload_device))`) could
        // launch a kernel from a simulated GPU thread; on a GPU the body has
        // no such code and no thread can launch through offload. Running the
        // inner launch here would also reset this worker's simulated-thread
        // state (`thread_idx()`, barriers) under the outer kernel.
        if IN_KERNEL.with(|k| k.get()) {
            return Err(Error::from(crate::error::InvalidLaunch {
                kernel: kernel.path(),
                reason: "it was launched from inside a kernel body (host-only code on the host fallback); \
                         a GPU thread cannot launch kernels through offload: launch it after the outer kernel returns"
                    .into(),
            }));
        }
        let (shared_limit, limit_source) = (self.shared_limit.0, &self.shared_limit.1);
        if cfg.shared_mem_bytes > shared_limit {
            return Err(Error::from(crate::error::InvalidLaunch {
                kernel: kernel.path(),
                reason: limits::dynamic_shared_reason(cfg.shared_mem_bytes, shared_limit, None, limit_source),
            }));
        }
        Ok(())
    }

    /// Runs a kernel to its end on the calling thread and the workers (a
    /// queue's worker calls it for a queued launch).
    pub(crate) fn run(&self, kernel: &'static KernelInfo, cfg: &LaunchConfig, host: &(dyn Fn() + Sync)) -> Result<()> {
        self.launch_impl(kernel, cfg, &[], host)
    }
}

/// Alignment of host-fallback buffers: CUDA's `cuMemAlloc` guarantees 256.
const ALIGN: usize = 256;

impl Backend for Host {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<u64> {
        if bytes == 0 {
            return Ok(ALIGN as u64);
        }
        let layout = std::alloc::Layout::from_size_align(bytes, ALIGN).map_err(|_| {
            Error::from(crate::error::Memory {
                op: "allocate",
                reason: format!("{bytes} bytes is more than one allocation can hold (isize::MAX rounded to {ALIGN})"),
            })
        })?;
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            let reason = format!("the host is out of memory for {bytes} bytes");
            return Err(Error::from(crate::error::Memory { op: "allocate", reason }));
        }
        Ok(p as u64)
    }

    unsafe fn free(&self, addr: u64, bytes: usize, _generation: u64) {
        if bytes == 0 {
            return;
        }
        let layout = std::alloc::Layout::from_size_align(bytes, ALIGN).expect("checked at allocation");
        // SAFETY: allocated by `alloc_zeroed` with this layout (caller's contract).
        unsafe { std::alloc::dealloc(addr as *mut u8, layout) }
    }

    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8> {
        // Host memory is all the host fallback has.
        self.alloc_zeroed(bytes).map(|a| a as *mut u8)
    }

    unsafe fn free_pinned(&self, ptr: *mut u8, bytes: usize) {
        // SAFETY: allocated by `alloc_pinned`, i.e. `alloc_zeroed(bytes)`.
        unsafe { self.free(ptr as u64, bytes, 0) }
    }

    unsafe fn copy_to_device(&self, dst: u64, src: *const u8, bytes: usize) -> Result<()> {
        // SAFETY: both valid for `bytes` (caller's contract); a buffer never
        // overlaps the caller's host slice.
        unsafe { core::ptr::copy_nonoverlapping(src, dst as *mut u8, bytes) };
        Ok(())
    }

    fn global(&self, _symbol: &str, _bytes: usize, host: *mut u8) -> Result<u64> {
        // The host fallback's device copy is the static's own storage.
        Ok(host as u64)
    }

    unsafe fn copy_from_device(&self, dst: *mut u8, src: u64, bytes: usize) -> Result<()> {
        // SAFETY: as above.
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, dst, bytes) };
        Ok(())
    }

    fn launch_impl(
        &self,
        kernel: &'static KernelInfo,
        cfg: &LaunchConfig,
        _args: &[ArgSpec<'_>],
        host: &(dyn Fn() + Sync),
    ) -> Result<()> {
        self.check_launch(kernel, cfg)?;
        install_panic_hook();
        // `DeviceGlobal::read`/`write` wait for the kernels of this backend.
        let _running = LAUNCHES.read().unwrap_or_else(|e| e.into_inner());
        let blocks = cfg.grid.volume();
        let workers = (self.workers as u64).min(blocks).max(1) as usize;
        let launch = Launch {
            host: self,
            kernel,
            cfg,
            body: host,
            claims: Claims::new(blocks, workers),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
        };
        POOL.run(workers, &|| launch.work());
        match launch.failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The worker threads of the host fallback, shared by every launch.
static POOL: pool::Pool = pool::Pool::new();

/// One launch on the host fallback, as its workers share it.
struct Launch<'a> {
    host: &'a Host,
    kernel: &'static KernelInfo,
    cfg: &'a LaunchConfig,
    /// Runs the threads of a runner (`hostsim::threads::run_threads`).
    body: &'a (dyn Fn() + Sync),
    /// The blocks not claimed yet.
    claims: Claims,
    /// A block failed otherwise than by a panic: the workers stop (a
    /// panicking thread ends alone, as on a GPU).
    stop: AtomicBool,
    /// The first failure.
    failure: Mutex<Option<Error>>,
}

impl Launch<'_> {
    /// One worker's part: claims runs of blocks and runs them until none is
    /// left or one fails otherwise than by a panic.
    fn work(&self) {
        // Stack overflows of the simulated threads become errors (see
        // `stack_guard`).
        stack_guard::prepare_thread();
        let _guard = CtxGuard;
        IN_KERNEL.with(|k| k.set(true));
        let k = self.kernel;
        stack_guard::set_kernel(Some(KernelName { module_path: k.module_path, name: k.name, instance: k.instance }));
        let (cfg, shared_limit) = (self.cfg, self.host.shared_limit.0 as usize);
        let mut exec = Executor::checkout(cfg.block, cfg.grid, self.host.stack_size, shared_limit);
        'claims: while !self.stop.load(Ordering::Relaxed) {
            let Some(run) = self.claims.claim() else {
                break;
            };
            for b in run {
                if self.stop.load(Ordering::Relaxed) {
                    break 'claims;
                }
                let block = unlinear(b, cfg.grid);
                if let Err(f) = exec.run_block(block, cfg.shared_mem_bytes, self.body) {
                    let panic = matches!(f, BlockFailure::Panic { .. });
                    let err = self.error(f, block);
                    let mut slot = self.failure.lock().unwrap_or_else(|e| e.into_inner());
                    if slot.is_none() {
                        *slot = Some(err);
                    }
                    if !panic {
                        self.stop.store(true, Ordering::Relaxed);
                        break 'claims;
                    }
                }
            }
        }
        exec.checkin();
    }

    /// The launch's error for block `block`'s failure.
    fn error(&self, f: BlockFailure, block: Dim3) -> Error {
        let (kernel, stack_kib) = (self.kernel, self.host.stack_size / 1024);
        match f {
            BlockFailure::Panic { thread, record } => {
                let (message, location) = match record {
                    Some(r) => (r.message, r.location),
                    None => ("<panic message unavailable>".into(), "<unknown>".into()),
                };
                Error::from(crate::error::KernelPanic {
                    kernel: kernel.path(),
                    message,
                    location,
                    block: fmt3(block),
                    thread: fmt3(thread),
                })
            }
            BlockFailure::NoStack { error } => Error::from(crate::error::Memory {
                op: "allocate the stack of a simulated GPU thread on the host fallback",
                reason: format!(
                    "kernel `{}` needs one stack of {stack_kib} KiB (OFFLOAD_HOST_STACK_KIB) for each thread of a \
                     block that waits at sync_threads or a warp collective, and the system refused one: \
                     {error}; lower OFFLOAD_HOST_STACK_KIB (from {MIN_STACK_KIB} to {MAX_STACK_KIB}) or \
                     launch smaller blocks",
                    kernel.path(),
                ),
            }),
            BlockFailure::Divergence { reason } => {
                Error::from(crate::error::Divergence { kernel: kernel.path(), block: fmt3(block), reason })
            }
            BlockFailure::Aborted { abort: Abort::StackOverflow, thread } => Error::from(crate::error::StackOverflow {
                kernel: kernel.path(),
                block: fmt3(block),
                thread: fmt3(thread),
                detail: format!(
                    "the host fallback's stack of {stack_kib} KiB per simulated GPU thread is exhausted (recursion too \
                     deep?); recurse less deeply, or raise OFFLOAD_HOST_STACK_KIB"
                ),
            }),
            BlockFailure::Aborted { abort: Abort::SharedMemory { static_bytes, dynamic }, .. } => {
                let (limit, source) = (self.host.shared_limit.0, &self.host.shared_limit.1);
                Error::from(crate::error::InvalidLaunch {
                    kernel: kernel.path(),
                    reason: limits::dynamic_shared_reason(dynamic, limit, Some(static_bytes), source),
                })
            }
        }
    }
}
