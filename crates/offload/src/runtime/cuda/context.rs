//! The CUDA backend's state and start-up of one GPU: its primary context,
//! the stream, the module loaded from the embedded image chosen for its
//! compute capability (`probe::choose_image`), the per-kernel function
//! table (with its dynamic shared memory opt-in), and rebuilding the
//! context after a kernel fails. Blocking launches are serialized by the
//! mutex around [`State`], held until the kernel has finished; queue
//! operations take only the [`Functions`]' lock, briefly, and make the
//! context current without the state's ([`Cuda::set_current`]); a queue's
//! wait reads the panic record under the panic lock only
//! ([`Cuda::panics`], see `panics`). The operations themselves are in
//! `launch`, large copies of pageable memory go through `staging`.
//!
//! # Locks
//!
//! Per GPU, in this order (a thread holding one may take a later one,
//! never an earlier one):
//!
//! 1. the state ([`Cuda::state`]): held across waits on the device (a
//!    blocking launch's kernel, `cuCtxSynchronize`, `cuMemFree` where the
//!    device has no memory pools; see `pool`), across allocations and
//!    frees (in the state's stream), and by a rebuild, which resets the
//!    context;
//! 2. the functions ([`Cuda::functions`]): held while a function is looked
//!    up or opted in, and by a rebuild while it replaces the module;
//! 3. the panic lock ([`Cuda::panics`]): the panic record and attribution.
//!    Held only to note a launch, to read the record (host memory) and,
//!    when one was found, to reset its claim in the record's own stream;
//!    never while a kernel is waited for. A blocking launch takes it
//!    before its `cuLaunchKernel` (to note its kernel) and after its
//!    kernel has finished (to read the record), each time briefly; a
//!    rebuild (`State::rebuild`, after a failed blocking launch or a
//!    queue's fault, `Cuda::fault`) takes it with the state held to drop
//!    the old record before the reset and to install the new one after.
//!
//! Queue operations take 2 or 3 alone, never 1 (except to create or
//! destroy handles: `Cuda::make_current`), so that nothing a queue waits
//! for depends on another thread's blocking launch.

use core::ffi::{c_int, c_uint, c_void};
use core::hash::BuildHasherDefault;
use std::collections::HashMap;
use std::ffi::CString;
use std::format;
use std::string::String;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::vec;
use std::vec::Vec;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use offload_image::{Image, ImageKind};

use super::error::driver_error;
use super::memory::{AddressHasher, Allocations, ArgCache};
use super::panics::{self, Panics};
use super::pool::DeviceMemory;
use super::probe::Unusable;
use super::probe::{self, attr};
use super::recover::{self, PanicSlot};
use super::staging::Transfers;
use crate::runtime::error::{Error, Result};
use crate::runtime::images;
use crate::runtime::info::{BackendInfo, BackendKind};
use crate::runtime::kernel::KernelInfo;
use crate::runtime::limits;

pub(super) struct State {
    pub(super) ctx: sys::CUcontext,
    pub(super) module: sys::CUmodule,
    pub(super) stream: sys::CUstream,
    /// The loaded module's kernels, shared with [`Cuda::functions`]:
    /// `rebuild` replaces the module in it.
    pub(super) functions: Arc<Mutex<Functions>>,
    /// The device, and the image loaded, to rebuild the context after a
    /// kernel fails (see `rebuild`).
    pub(super) dev: sys::CUdevice,
    pub(super) image: Image<'static>,
    /// Whether `image` has the device link's stack probe (`None`: not
    /// known; see `recover::has_stack_probe`).
    pub(super) stack_probe: Option<bool>,
    /// The panic record and its attribution, shared with [`Cuda::panics`]:
    /// `rebuild` replaces the record in it.
    pub(super) panics: Arc<Mutex<Panics>>,
    // Scratch of `launch_impl`, kept between launches so that a launch
    // allocates nothing on the host.
    pub(super) allocs: Vec<(usize, sys::CUdeviceptr)>,
    pub(super) cache: ArgCache,
    pub(super) device_ptrs: Vec<sys::CUdeviceptr>,
    pub(super) slots: Vec<u64>,
    pub(super) params: Vec<*mut c_void>,
    /// Pinned staging buffers and copy threads for large copies of
    /// pageable memory (see `staging`).
    pub(super) xfer: Transfers,
    /// Shared with [`Cuda::current`]; `rebuild` updates it.
    pub(super) current: Arc<Current>,
}

/// The kernels of the loaded module, each looked up once
/// (`cuModuleGetFunction`), behind a lock of their own: a queued launch
/// takes only this one, briefly, never the state's, which a blocking launch
/// holds while its kernel runs (so that a queue's launches return at once
/// even while another thread waits for a blocking launch). Lock order:
/// the state, then this.
pub(super) struct Functions {
    module: sys::CUmodule,
    /// Functions by the address of their `KernelInfo` (one static per kernel).
    by_kernel: HashMap<usize, Function, BuildHasherDefault<AddressHasher>>,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: shared memory
    /// a block may use, static and dynamic, once its kernel opts in.
    shared_optin: u32,
    /// The image's kernel names, for `Error::KernelNotFound`.
    kernels: Vec<String>,
}

// SAFETY: module and function handles may be used from any host thread once
// their context is current (CUDA Driver API, "Context Management"); callers
// make it current first (`Cuda::prepare`, `Cuda::enter`).
unsafe impl Send for Functions {}

/// A kernel of the loaded module, with what its launches need to know about
/// dynamic shared memory, read once.
#[derive(Clone, Copy)]
pub(super) struct Function {
    pub(super) f: sys::CUfunction,
    /// The kernel's static shared memory (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    pub(super) static_shared: u32,
    /// The kernel's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`:
    /// launches may ask for up to this much without a change.
    pub(super) dynamic_allowed: u32,
}

// SAFETY: CUDA driver handles may be used from any host thread once their
// context is current on it (CUDA Driver API, "Context Management"); every use
// goes through the `Mutex<State>` and makes the context current first.
unsafe impl Send for State {}

pub(crate) struct Cuda {
    pub(super) info: BackendInfo,
    pub(super) state: Mutex<State>,
    /// The module's kernels (see [`Functions`]); the same as the state's.
    pub(super) functions: Arc<Mutex<Functions>>,
    /// The context in use and its generation, readable without the lock.
    pub(super) current: Arc<Current>,
    /// The context's panic record (see `panic_record`), the kernels
    /// launched on this GPU's queues (and the blocking one in flight) whose
    /// completion nobody has checked yet, and panics kept for queues: a
    /// panic found in the record is attributed to them (see `panics`,
    /// `queue::attrib`). The last lock of the order (see the module docs).
    pub(super) panics: Arc<Mutex<Panics>>,
}

/// The primary context a [`Cuda`] uses now, and its generation: written
/// with the state locked whenever the context changes (start-up,
/// `State::rebuild`), read without the lock by [`Cuda::set_current`] and
/// by whoever checks a handle's generation.
pub(super) struct Current {
    ctx: AtomicPtr<sys::CUctx_st>,
    /// Incremented when the context is rebuilt after a sticky fault:
    /// handles of queues (streams, events), graphs and buffers of an older
    /// generation are dead and never used again (see `queue`).
    generation: AtomicU64,
    /// The context's memory pool (null: `cuMemAlloc`/`cuMemFree`), the
    /// same as the state's `cache.memory`, for queues' allocations without
    /// the state's lock ([`Cuda::memory`]).
    pool: AtomicPtr<sys::CUmemPoolHandle_st>,
}

impl Cuda {
    /// Starts GPU `ordinal` (which [`probe::enumerate`] listed): retains its
    /// primary context, loads the image chosen for its compute capability,
    /// makes a stream and configures the context.
    pub(crate) fn new(ordinal: u32) -> core::result::Result<Self, Unusable> {
        let dev = probe::device(ordinal)?;
        let major = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
        let minor = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
        let multiprocessors = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let shared_optin =
            attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        let name = result::device::get_name(dev).unwrap_or_else(|_| "CUDA GPU".into());
        // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
        let mem = unsafe { result::device::total_mem(dev) }.unwrap_or(0);
        let device = format!("{name} (sm_{major}{minor})");
        let (all, chosen) = embedded_image(&device, major, minor)?;

        // SAFETY: `dev` is a valid device; the primary context stays retained
        // for the life of the process (the backend is never dropped).
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| Unusable::Failed(driver_error("cuDevicePrimaryCtxRetain", None, e)))?;
        // SAFETY: `ctx` was just retained.
        unsafe { result::ctx::set_current(ctx) }
            .map_err(|e| Unusable::Failed(driver_error("cuCtxSetCurrent", None, e)))?;

        let (module, loaded) = load_with_fallback(all, chosen, major, minor)?;
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| Unusable::Failed(driver_error("cuStreamCreate", None, e)))?;
        let stack_bytes = recover::configure_context().map_err(Unusable::Failed)?;
        // After the limit: the recursion checks' floor depends on it.
        let stack_probe = recover::has_stack_probe(all, &loaded);
        recover::install_stack_floor(module, stream, stack_probe).map_err(Unusable::Failed)?;
        let panic = PanicSlot::install(module);

        let description = describe(&device, mem, &loaded);
        let kernels = loaded.kernel_names().map(String::from).collect();
        let memory = DeviceMemory::new(dev);
        let current = Arc::new(Current {
            ctx: AtomicPtr::new(ctx),
            generation: AtomicU64::new(0),
            pool: AtomicPtr::new(memory.raw()),
        });
        let functions =
            Arc::new(Mutex::new(Functions { module, by_kernel: HashMap::default(), shared_optin, kernels }));
        let info = BackendInfo {
            kind: BackendKind::Cuda,
            description,
            multiprocessors,
            shared_memory_per_block: shared_optin,
        };
        let panics = Arc::new(Mutex::new(Panics::new(panic, stack_bytes)));
        Ok(Cuda {
            info,
            current: current.clone(),
            panics: panics.clone(),
            functions: functions.clone(),
            state: Mutex::new(State {
                ctx,
                module,
                stream,
                functions,
                dev,
                image: loaded,
                stack_probe,
                panics,
                allocs: Vec::new(),
                cache: ArgCache { free: Vec::new(), bytes: 0, cap: mem / 16, memory },
                device_ptrs: Vec::new(),
                slots: Vec::new(),
                params: Vec::new(),
                xfer: Transfers::new(),
                current,
            }),
        })
    }
}

/// The backend's one-line description: the GPU, its memory, the driver's
/// version and the image loaded.
fn describe(device: &str, mem: usize, loaded: &Image<'_>) -> String {
    let mut version: c_int = 0;
    // SAFETY: writes one int.
    let _ = unsafe { sys::cuDriverGetVersion(&mut version) };
    let how = match loaded.kind {
        ImageKind::Cubin => format!("{} cubin", loaded.arch),
        ImageKind::Ptx => format!("{} PTX, JIT-compiled by the driver", loaded.arch),
        ImageKind::AmdgpuElf => format!("{} code object", loaded.arch),
    };
    format!(
        "{device}, {:.1} GiB, driver {}.{}, image: {how}",
        mem as f64 / (1u64 << 30) as f64,
        version / 1000,
        (version % 1000) / 10
    )
}

/// This binary's intact images, and the one a GPU of compute capability
/// `major.minor` loads ([`probe::choose_image`]). Corrupted images (and a
/// damaged section) are left out here (with a warning), before any of
/// their bytes reach the driver.
fn embedded_image(
    device: &str,
    major: u32,
    minor: u32,
) -> core::result::Result<(&'static [Image<'static>], Image<'static>), Unusable> {
    let embedded = images::embedded();
    let all = &embedded.intact[..];
    let skipped = match embedded.corrupted {
        0 => String::new(),
        n => format!(" ({n} corrupted image(s) left out: see the warning above)"),
    };
    if all.is_empty() {
        let reason = if let Some(e) = &embedded.damaged {
            format!(
                "the device image section of this binary is damaged ({e}: see the warning above); rebuild it \
                 with `cargo offload build`"
            )
        } else if embedded.corrupted == 0 {
            "this binary carries no device image (it was built without `cargo offload`); build it with `cargo offload build` or run it with `cargo offload run`".into()
        } else {
            format!("every device image in this binary is corrupted{skipped}; rebuild it with `cargo offload build`")
        };
        return Err(Unusable::Failed(Error::from(crate::error::NoImage { device: device.into(), reason })));
    }
    let chosen = probe::choose_image(all, major, minor, device, &skipped).map_err(Unusable::Failed)?;
    Ok((all, chosen))
}

/// Loads `chosen`; a cubin from a newer toolkit than the driver falls back
/// to the PTX of the same bundle, which the driver JIT-compiles. Returns
/// the module and the image it came from.
fn load_with_fallback(
    all: &[Image<'static>],
    chosen: Image<'static>,
    major: u32,
    minor: u32,
) -> core::result::Result<(sys::CUmodule, Image<'static>), Unusable> {
    match load_module(&chosen) {
        Ok(m) => Ok((m, chosen)),
        Err(e) => {
            let ptx: Vec<Image<'static>> = all.iter().filter(|i| i.kind == ImageKind::Ptx).copied().collect();
            let ptx = offload_image::select(&ptx, offload_image::Device::Cuda { major, minor });
            match (chosen.kind, ptx) {
                (ImageKind::Cubin, Some(p)) => Ok((load_module(&p).map_err(Unusable::Failed)?, p)),
                _ => Err(Unusable::Failed(e)),
            }
        }
    }
}

/// Loads a PTX or cubin image; the JIT's error log is kept in the error.
fn load_module(image: &Image<'_>) -> Result<sys::CUmodule> {
    let mut data: Vec<u8> = image.bytes.to_vec();
    if image.kind == ImageKind::Ptx && data.last() != Some(&0) {
        // cuModuleLoadDataEx reads PTX as a NUL-terminated string.
        data.push(0);
    }
    let mut log = vec![0u8; 16 * 1024];
    let mut options =
        [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut module = core::ptr::null_mut();
    // SAFETY: `data` is a complete image (NUL-terminated if PTX), the option
    // arrays have two entries each, and the log buffer outlives the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            data.as_ptr() as *const c_void,
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    match r.result() {
        Ok(()) => Ok(module),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let mut err = driver_error("cuModuleLoadDataEx", None, e);
            if let Error::Driver(d) = &mut err {
                let text = String::from_utf8_lossy(&log[..end]).into_owned();
                d.log = Some(format!("while loading the {} for {}: {}", image.kind, image.arch, text));
            }
            Err(err)
        }
    }
}

impl Functions {
    /// The function of `kernel` (`Error::KernelNotFound`,
    /// `Error::InstanceNotBuilt` if the image lacks it).
    pub(super) fn function(&mut self, kernel: &'static KernelInfo) -> Result<Function> {
        let key = kernel as *const KernelInfo as usize;
        if let Some(&f) = self.by_kernel.get(&key) {
            return Ok(f);
        }
        let sym = CString::new(kernel.symbol).expect("kernel symbols have no NUL bytes");
        // SAFETY: `module` is loaded and stays loaded.
        match unsafe { result::module::get_function(self.module, sym) } {
            Ok(f) => {
                let attr = |a| {
                    // SAFETY: `f` was just found in the loaded module.
                    unsafe { result::function::get_function_attribute(f, a) }
                        .map(|v| v.max(0) as u32)
                        .map_err(|e| driver_error("cuFuncGetAttribute", Some(&kernel.path()), e))
                };
                let static_shared = attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
                let dynamic_allowed = attr(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
                let function = Function { f, static_shared, dynamic_allowed };
                self.by_kernel.insert(key, function);
                Ok(function)
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND && !kernel.instance.is_empty() => {
                Err(Error::from(crate::error::InstanceNotBuilt {
                    kernel: format!("{}::{}", kernel.module_path, kernel.name),
                    instance: kernel.instance.into(),
                }))
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => Err(Error::from(crate::error::KernelNotFound {
                kernel: kernel.path(),
                symbol: kernel.symbol.into(),
                available: self.kernels.clone(),
            })),
            Err(e) => Err(driver_error("cuModuleGetFunction", Some(&kernel.path()), e)),
        }
    }

    /// Lets `function` launch with `bytes` of dynamic shared memory: above
    /// what it may use now (48 KiB minus its static shared memory, until it
    /// opts in), it opts in once to the most the GPU allows
    /// (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`,
    /// CUDA C++ Programming Guide, "Configuring L1/Shared Memory Balance");
    /// beyond that the launch is invalid, before anything runs.
    pub(super) fn allow_dynamic_shared(
        &mut self,
        kernel: &'static KernelInfo,
        function: Function,
        bytes: u32,
    ) -> Result<()> {
        if bytes <= function.dynamic_allowed {
            return Ok(());
        }
        let limit = self.shared_optin.saturating_sub(function.static_shared);
        if bytes > limit {
            return Err(Error::from(crate::error::InvalidLaunch {
                kernel: kernel.path(),
                reason: limits::dynamic_shared_reason(
                    bytes,
                    self.shared_optin,
                    Some(function.static_shared),
                    "this GPU's opt-in limit (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                ),
            }));
        }
        // SAFETY: `function.f` belongs to the loaded module; the value is
        // within the device's limit (checked above).
        unsafe {
            result::function::set_function_attribute(
                function.f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit as i32,
            )
        }
        .map_err(|e| {
            driver_error("cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", Some(&kernel.path()), e)
        })?;
        let key = kernel as *const KernelInfo as usize;
        if let Some(f) = self.by_kernel.get_mut(&key) {
            f.dynamic_allowed = limit;
        }
        Ok(())
    }

    /// The module now loaded (for `rebuild`), its functions forgotten.
    fn replace_module(&mut self, module: sys::CUmodule) {
        self.module = module;
        self.by_kernel.clear();
    }
}

impl Cuda {
    /// Makes this GPU's context current on this thread without locking the
    /// state, for queue operations (launches, records, event waits and
    /// queries, copies on a queue's stream: `cuLaunchKernel`,
    /// `cuEventRecord`, `cuEventSynchronize`, `cuEventQuery`,
    /// `cuEventElapsedTime`, `cuMemcpyAsync`). Other threads hold the lock across waits on the
    /// device (a blocking launch waits for its kernel, a free without
    /// memory pools calls `cuMemFree`, which may wait for the device's
    /// work): a wait for an event that first took the lock
    /// would also wait for that, including work queued after the event. The
    /// caller checks its event's generation first.
    ///
    /// Every driver call of this backend runs with its own GPU's context
    /// current on the calling thread (this, or [`enter`](Self::enter)): a
    /// thread that drives two GPUs, or a queue's work of one GPU after a
    /// call for another, never uses the context the thread had last.
    ///
    /// # Errors
    /// [`Error::Driver`] if `cuCtxSetCurrent` fails.
    pub(super) fn set_current(&self) -> Result<()> {
        let ctx = self.current.ctx.load(Ordering::Acquire);
        // SAFETY: the primary context retained at start-up or by the latest
        // rebuild (while a rebuild runs, the one it is resetting: a primary
        // context's handle, which cuCtxSetCurrent accepts; the caller's event
        // of the old generation is then not used, or fails cleanly).
        unsafe { bind(ctx) }.map_err(|e| driver_error("cuCtxSetCurrent", None, e))
    }

    /// How the context in use allocates device memory (see `pool`),
    /// without the state's lock: for queues' allocations, in their own
    /// stream. Memory of a rebuilt context is never freed, so an answer
    /// about an older context is harmless.
    pub(super) fn memory(&self) -> DeviceMemory {
        DeviceMemory::from_raw(self.current.pool.load(Ordering::Acquire))
    }

    /// The context's generation (see [`Current::generation`]).
    pub(crate) fn generation(&self) -> u64 {
        self.current.generation.load(Ordering::Acquire)
    }
}

impl Cuda {
    /// Locks the state and makes the context current on this thread.
    pub(super) fn enter(&self, op: &'static str) -> Result<std::sync::MutexGuard<'_, State>> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the context was retained at start-up.
        unsafe { bind(st.ctx) }.map_err(|e| driver_error(op, None, e))?;
        Ok(st)
    }
}

/// Makes `ctx` current on this thread: asks the driver which context is
/// current (`cuCtxGetCurrent`, a read of the thread's binding) and calls
/// `cuCtxSetCurrent` only if it is another, as cudarc's
/// `CudaContext::bind_to_thread` does. Every queued launch and blocking
/// launch makes its GPU's context current; on the H200 machine setting it
/// each time cost more than asking (bench/results/2026-12-02-queued).
///
/// # Safety
/// `ctx` is a context that the driver accepts in `cuCtxSetCurrent` (one
/// this backend retained).
unsafe fn bind(ctx: sys::CUcontext) -> core::result::Result<(), DriverError> {
    if matches!(result::ctx::get_current(), Ok(Some(c)) if c == ctx) {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { result::ctx::set_current(ctx) }
}

impl State {
    /// A kernel failed while running (an illegal address, a trap): report
    /// the recorded panic if there is one, then rebuild the context, which
    /// such errors leave unusable ("sticky"), so that later launches work
    /// if CUDA allows it. The launch's device memory (and the argument
    /// cache) went with the old context, so it is forgotten, not freed.
    pub(super) fn after_failed_kernel(&mut self, kernel: &str, e: DriverError, mut allocs: Allocations) -> Error {
        allocs.blocks.clear();
        self.cache.forget();
        let err = {
            let p = panics::lock(&self.panics);
            recover::failed_launch_error(p.slot.as_ref(), kernel, e, p.stack_bytes)
        };
        if let Err(rebuild) = self.rebuild() {
            return Error::from(crate::error::Driver {
                op: "rebuilding the CUDA context after a failed kernel",
                kernel: Some(kernel.into()),
                code: 0,
                name: "CUDA_ERROR_UNKNOWN".into(),
                text: format!(
                    "{rebuild}; the kernel's own failure was: {err}. CUDA leaves a context in this state unusable \
                     until the process ends: restart the program"
                ),
                log: None,
            });
        }
        err
    }

    /// Resets the primary context (freeing everything in it, the panic
    /// record included), retains it again and reloads the module.
    pub(super) fn rebuild(&mut self) -> Result<()> {
        // Queued launches wait here until the new module is in (lock order:
        // the state, held by the caller, then the functions).
        let functions = self.functions.clone();
        let mut functions = functions.lock().unwrap_or_else(|e| e.into_inner());
        // Queues' checks (which take the panic lock alone) never read the
        // old record once the reset below frees it: forget it first. Lock
        // order: the state, the functions, then this, released at once.
        panics::lock(&self.panics).slot = None;
        // The reset frees the staging buffers and events: forget them first
        // (if the reset fails they leak, which is sound).
        self.xfer.forget_context();
        // SAFETY: the primary context of `dev` is ours; resetting it
        // destroys every handle of the old state, which is replaced below
        // before any use.
        unsafe {
            sys::cuDevicePrimaryCtxReset_v2(self.dev)
                .result()
                .map_err(|e| driver_error("cuDevicePrimaryCtxReset", None, e))?;
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
            self.ctx =
                result::primary_ctx::retain(self.dev).map_err(|e| driver_error("cuDevicePrimaryCtxRetain", None, e))?;
            result::ctx::set_current(self.ctx).map_err(|e| driver_error("cuCtxSetCurrent", None, e))?;
        }
        self.current.ctx.store(self.ctx, Ordering::Release);
        // The reset freed the cached blocks; the pool is set up again for
        // the new context.
        self.cache.forget();
        self.cache.memory = DeviceMemory::new(self.dev);
        self.current.pool.store(self.cache.memory.raw(), Ordering::Release);
        // Queues' streams, fences and buffers of the old context are
        // forgotten from now on (see `queue`).
        self.current.generation.fetch_add(1, Ordering::AcqRel);
        self.module = load_module(&self.image)?;
        functions.replace_module(self.module);
        self.stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver_error("cuStreamCreate", None, e))?;
        let stack_bytes = recover::configure_context()?;
        // The new context's stacks: measured again (same module, new
        // context, and its limit set anew).
        recover::install_stack_floor(self.module, self.stream, self.stack_probe)?;
        let slot = PanicSlot::install(self.module);
        let mut p = panics::lock(&self.panics);
        p.slot = slot;
        p.stack_bytes = stack_bytes;
        Ok(())
    }
}
