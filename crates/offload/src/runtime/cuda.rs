//! The CUDA backend, on the driver API through `cudarc`'s `sys`/`result`
//! layers. The driver library is loaded at run time (`dlopen`), so building
//! needs no CUDA installation and a machine without one falls back to the
//! host.
//!
//! One process uses device 0 (as `CUDA_VISIBLE_DEVICES` orders them), its
//! primary context, one non-blocking stream and one module loaded from the
//! embedded image chosen by `offload_image::select`. Launches are serialized
//! by a mutex: each maps its arguments (device memory from the
//! [`ArgCache`], copy host → device), launches, waits, copies `&mut`
//! arguments back and returns the memory to the cache. Large copies from
//! and to pageable host memory, explicit or for a launch, go through the
//! pinned staging pipeline of `cuda_staging`.

use core::ffi::{c_int, c_uint, c_void};
use core::hash::{BuildHasherDefault, Hasher};
use std::collections::HashMap;
use std::ffi::CString;
use std::format;
use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec;
use std::vec::Vec;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use offload_image::{Image, ImageKind};

use super::cuda_recover::{self, PanicSlot};
use super::cuda_staging::Transfers;
use super::images;
use super::{Backend, BackendInfo, BackendKind, Unusable};
use crate::error::{Error, Result};
use crate::launch::{ArgKind, ArgSpec, KernelInfo};
use crate::LaunchConfig;

/// Turns a driver error into [`Error::Driver`].
pub(crate) fn driver_error(op: &'static str, kernel: Option<&str>, e: DriverError) -> Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| "CUDA_ERROR_UNKNOWN".into());
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Error::Driver { op, kernel: kernel.map(Into::into), code: e.0 as u32, name, text, log: None }
}

struct State {
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    stream: sys::CUstream,
    /// Functions by the address of their `KernelInfo` (one static per kernel).
    functions: HashMap<usize, Function, BuildHasherDefault<AddressHasher>>,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: shared memory
    /// a block may use, static and dynamic, once its kernel opts in.
    shared_optin: u32,
    kernels: Vec<String>,
    /// The device, and the image loaded, to rebuild the context after a
    /// kernel fails (see `rebuild`).
    dev: sys::CUdevice,
    image: Image<'static>,
    /// Where device panics are recorded (see `panic_record`).
    panic: Option<PanicSlot>,
    /// `CU_LIMIT_STACK_SIZE` of the context, for stack-overflow errors.
    stack_bytes: usize,
    // Scratch of `launch_impl`, kept between launches so that a launch
    // allocates nothing on the host.
    allocs: Vec<(usize, sys::CUdeviceptr)>,
    cache: ArgCache,
    device_ptrs: Vec<sys::CUdeviceptr>,
    slots: Vec<u64>,
    params: Vec<*mut c_void>,
    /// Pinned staging buffers and copy threads for large copies of
    /// pageable memory (see `cuda_staging`).
    xfer: Transfers,
}

/// Hashes a `usize` key (an address) as itself; addresses of distinct
/// statics are distinct, so nothing is gained by mixing.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Statics are at least 8-aligned: drop the always-zero bits.
        self.0 = (n as u64) >> 3;
    }
}

/// A kernel of the loaded module, with what its launches need to know about
/// dynamic shared memory, read once.
#[derive(Clone, Copy)]
struct Function {
    f: sys::CUfunction,
    /// The kernel's static shared memory (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`).
    static_shared: u32,
    /// The kernel's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`:
    /// launches may ask for up to this much without a change.
    dynamic_allowed: u32,
}

// SAFETY: CUDA driver handles may be used from any host thread once their
// context is current on it (CUDA Driver API, "Context Management"); every use
// goes through the `Mutex<State>` and makes the context current first.
unsafe impl Send for State {}

pub(crate) struct Cuda {
    info: BackendInfo,
    state: Mutex<State>,
}

fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> core::result::Result<i32, Unusable> {
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    unsafe { result::device::get_attribute(dev, a) }
        .map_err(|e| Unusable::Failed(driver_error("cuDeviceGetAttribute", None, e)))
}

impl Cuda {
    pub(crate) fn new() -> core::result::Result<Self, Unusable> {
        // SAFETY: only tries to `dlopen` the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Unusable::NoDriver);
        }
        if let Err(e) = result::init() {
            return Err(if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE {
                Unusable::NoGpu
            } else {
                Unusable::Failed(driver_error("cuInit", None, e))
            });
        }
        let count = result::device::get_count()
            .map_err(|e| Unusable::Failed(driver_error("cuDeviceGetCount", None, e)))?;
        if count == 0 {
            return Err(Unusable::NoGpu);
        }
        let dev = result::device::get(0).map_err(|e| Unusable::Failed(driver_error("cuDeviceGet", None, e)))?;
        let major = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
        let minor = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
        let multiprocessors = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let shared_optin =
            attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        let name = result::device::get_name(dev).unwrap_or_else(|_| "CUDA GPU".into());
        // SAFETY: as in `attr`.
        let mem = unsafe { result::device::total_mem(dev) }.unwrap_or(0);
        let mut version: c_int = 0;
        // SAFETY: writes one int.
        let _ = unsafe { sys::cuDriverGetVersion(&mut version) };
        let device = format!("{name} (sm_{major}{minor})");

        // Corrupted images are left out here (with a warning), before any
        // of their bytes reach the driver.
        let embedded = images::embedded().map_err(|e| Unusable::Failed(Error::BadImage(e.to_string())))?;
        let all = &embedded.intact;
        let skipped = match embedded.corrupted {
            0 => String::new(),
            n => format!(" ({n} corrupted image(s) left out: see the warning above)"),
        };
        if all.is_empty() {
            let reason = if embedded.corrupted == 0 {
                "this binary carries no device image (it was built without `cargo offload`); build it with `cargo offload build` or run it with `cargo offload run`".into()
            } else {
                format!("every device image in this binary is corrupted{skipped}; rebuild it with `cargo offload build`")
            };
            return Err(Unusable::Failed(Error::NoImage { device, reason }));
        }
        let chosen = offload_image::select(all, offload_image::Device::Cuda { major, minor }).ok_or_else(|| {
            let have: Vec<String> = all.iter().map(|i| format!("{} for {}", i.kind, i.arch)).collect();
            Unusable::Failed(Error::NoImage {
                device: device.clone(),
                reason: format!(
                    "the binary carries {}{skipped}, none of which runs on sm_{major}{minor}; rebuild with `cargo offload build --arch sm_{major}{minor}`",
                    have.join(", ")
                ),
            })
        })?;

        // SAFETY: `dev` is a valid device; the primary context stays retained
        // for the life of the process (the backend is never dropped).
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| Unusable::Failed(driver_error("cuDevicePrimaryCtxRetain", None, e)))?;
        // SAFETY: `ctx` was just retained.
        unsafe { result::ctx::set_current(ctx) }
            .map_err(|e| Unusable::Failed(driver_error("cuCtxSetCurrent", None, e)))?;

        let (module, loaded) = match load_module(&chosen) {
            Ok(m) => (m, chosen),
            Err(e) => {
                // A cubin from a newer toolkit than the driver: fall back to
                // the PTX of the same bundle, which the driver JIT-compiles.
                let ptx: Vec<Image<'static>> = all.iter().filter(|i| i.kind == ImageKind::Ptx).copied().collect();
                let ptx = offload_image::select(&ptx, offload_image::Device::Cuda { major, minor });
                match (chosen.kind, ptx) {
                    (ImageKind::Cubin, Some(p)) => (load_module(&p).map_err(Unusable::Failed)?, p),
                    _ => return Err(Unusable::Failed(e)),
                }
            }
        };
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| Unusable::Failed(driver_error("cuStreamCreate", None, e)))?;
        let stack_bytes = cuda_recover::configure_context().map_err(Unusable::Failed)?;
        // After the limit: the recursion checks' floor depends on it.
        cuda_recover::install_stack_floor(module, stream).map_err(Unusable::Failed)?;
        let panic = PanicSlot::install(module);

        let how = match loaded.kind {
            ImageKind::Cubin => format!("{} cubin", loaded.arch),
            ImageKind::Ptx => format!("{} PTX, JIT-compiled by the driver", loaded.arch),
            ImageKind::AmdgpuElf => format!("{} code object", loaded.arch),
        };
        let description = format!(
            "{device}, {:.1} GiB, driver {}.{}, image: {how}",
            mem as f64 / (1u64 << 30) as f64,
            version / 1000,
            (version % 1000) / 10
        );
        let kernels = loaded.kernel_names().map(String::from).collect();
        Ok(Cuda {
            info: BackendInfo {
                kind: BackendKind::Cuda,
                description,
                multiprocessors,
                shared_memory_per_block: shared_optin,
            },
            state: Mutex::new(State {
                ctx,
                module,
                stream,
                functions: HashMap::default(),
                shared_optin,
                kernels,
                dev,
                image: loaded,
                panic,
                stack_bytes,
                allocs: Vec::new(),
                cache: ArgCache { free: Vec::new(), bytes: 0, cap: (mem / 16) as usize },
                device_ptrs: Vec::new(),
                slots: Vec::new(),
                params: Vec::new(),
                xfer: Transfers::new(),
            }),
        })
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
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
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
            if let Error::Driver { log: slot, .. } = &mut err {
                let text = String::from_utf8_lossy(&log[..end]).into_owned();
                *slot = Some(format!("while loading the {} for {}: {}", image.kind, image.arch, text));
            }
            Err(err)
        }
    }
}

/// Device memory of one launch's mapped arguments, `(bytes, pointer)`;
/// freed when dropped (error paths), handed to the [`ArgCache`] on success.
struct Allocations(Vec<(usize, sys::CUdeviceptr)>);

impl Allocations {
    /// Gives every allocation to `cache` and returns the emptied vector.
    fn release(mut self, cache: &mut ArgCache) -> Vec<(usize, sys::CUdeviceptr)> {
        for (size, p) in self.0.drain(..) {
            cache.put(size, p);
        }
        core::mem::take(&mut self.0)
    }
}

impl Drop for Allocations {
    fn drop(&mut self) {
        for &(_, p) in &self.0 {
            // SAFETY: each pointer came from `cuMemAlloc` for this launch and
            // is freed once; the kernel has finished (or never started).
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

/// Device memory for the mapped arguments of launches (host `&[T]` and
/// `&mut [T]`), kept between launches and reused by size, as LLVM offload's
/// `MemoryManagerTy` does: a launch that maps data of the sizes an earlier
/// one mapped neither allocates nor frees (`cuMemFree` also waits for the
/// whole device). At most `cap` bytes (1/16 of the GPU's memory) are kept;
/// when an allocation fails for lack of memory the cache is emptied and the
/// allocation tried again.
struct ArgCache {
    /// `(bytes, pointer)` of unused blocks, oldest first.
    free: Vec<(usize, sys::CUdeviceptr)>,
    bytes: usize,
    cap: usize,
}

impl ArgCache {
    /// A block of at least `bytes` and at most twice as many, the smallest.
    fn take(&mut self, bytes: usize) -> Option<(usize, sys::CUdeviceptr)> {
        let i = (0..self.free.len())
            .filter(|&i| self.free[i].0 >= bytes && self.free[i].0 / 2 <= bytes)
            .min_by_key(|&i| self.free[i].0)?;
        let block = self.free.remove(i);
        self.bytes -= block.0;
        Some(block)
    }

    /// Keeps an unused block, evicting the oldest ones beyond `cap`.
    fn put(&mut self, size: usize, p: sys::CUdeviceptr) {
        if size > self.cap {
            // SAFETY: `p` is an unused block from `cuMemAlloc`, freed once.
            let _ = unsafe { result::free_sync(p) };
            return;
        }
        while self.bytes + size > self.cap {
            let (old, q) = self.free.remove(0);
            self.bytes -= old;
            // SAFETY: as above.
            let _ = unsafe { result::free_sync(q) };
        }
        self.free.push((size, p));
        self.bytes += size;
    }

    /// Frees every kept block.
    fn clear(&mut self) {
        for (_, p) in self.free.drain(..) {
            // SAFETY: as in `put`.
            let _ = unsafe { result::free_sync(p) };
        }
        self.bytes = 0;
    }

    /// `cuMemAlloc`, emptying the cache and trying again if the device is
    /// out of memory. The context must be current.
    fn alloc(&mut self, bytes: usize) -> core::result::Result<sys::CUdeviceptr, DriverError> {
        // SAFETY: allocating has no preconditions beyond a current context.
        match unsafe { result::malloc_sync(bytes) } {
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY && !self.free.is_empty() => {
                self.clear();
                // SAFETY: as above.
                unsafe { result::malloc_sync(bytes) }
            }
            r => r,
        }
    }
}

impl State {
    fn function(&mut self, kernel: &'static KernelInfo) -> Result<Function> {
        let key = kernel as *const KernelInfo as usize;
        if let Some(&f) = self.functions.get(&key) {
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
                self.functions.insert(key, function);
                Ok(function)
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND && !kernel.instance.is_empty() => {
                Err(Error::InstanceNotBuilt {
                    kernel: format!("{}::{}", kernel.module_path, kernel.name),
                    instance: kernel.instance.into(),
                })
            }
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => Err(Error::KernelNotFound {
                kernel: kernel.path(),
                symbol: kernel.symbol.into(),
                available: self.kernels.clone(),
            }),
            Err(e) => Err(driver_error("cuModuleGetFunction", Some(&kernel.path()), e)),
        }
    }

    /// Lets `function` launch with `bytes` of dynamic shared memory: above
    /// what it may use now (48 KiB minus its static shared memory, until it
    /// opts in), it opts in once to the most the GPU allows
    /// (`cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`,
    /// CUDA C++ Programming Guide, "Configuring L1/Shared Memory Balance");
    /// beyond that the launch is invalid, before anything runs.
    fn allow_dynamic_shared(&mut self, kernel: &'static KernelInfo, function: Function, bytes: u32) -> Result<()> {
        if bytes <= function.dynamic_allowed {
            return Ok(());
        }
        let limit = self.shared_optin.saturating_sub(function.static_shared);
        if bytes > limit {
            return Err(Error::InvalidLaunch {
                kernel: kernel.path(),
                reason: super::limits::dynamic_shared_reason(
                    bytes,
                    self.shared_optin,
                    Some(function.static_shared),
                    "this GPU's opt-in limit (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                ),
            });
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
        .map_err(|e| driver_error("cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", Some(&kernel.path()), e))?;
        let key = kernel as *const KernelInfo as usize;
        if let Some(f) = self.functions.get_mut(&key) {
            f.dynamic_allowed = limit;
        }
        Ok(())
    }
}

impl Cuda {
    /// Locks the state and makes the context current on this thread.
    fn enter(&self, op: &'static str) -> Result<std::sync::MutexGuard<'_, State>> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the context was retained at start-up.
        unsafe { result::ctx::set_current(st.ctx) }.map_err(|e| driver_error(op, None, e))?;
        Ok(st)
    }
}

impl Backend for Cuda {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<u64> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut st = self.enter("cuCtxSetCurrent")?;
        let d = st.cache.alloc(bytes).map_err(|e| driver_error("cuMemAlloc", None, e))?;
        // Ordered in the launch stream and waited for: a plain cuMemsetD8 runs
        // on the legacy stream, which our non-blocking stream does not wait for.
        // SAFETY: `d` holds `bytes` bytes; the stream belongs to the context.
        let zeroed = unsafe { sys::cuMemsetD8Async(d, 0, bytes, st.stream) }
            .result()
            .and_then(|()| unsafe { result::stream::synchronize(st.stream) });
        if let Err(e) = zeroed {
            // SAFETY: `d` was just allocated and is not in use.
            let _ = unsafe { result::free_sync(d) };
            return Err(driver_error("cuMemsetD8", None, e));
        }
        Ok(d)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) {
        if bytes == 0 {
            return;
        }
        if let Ok(_st) = self.enter("cuCtxSetCurrent") {
            // SAFETY: allocated by `alloc_zeroed`, freed once, not in use
            // (caller's contract).
            let _ = unsafe { result::free_sync(addr) };
        }
    }

    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8> {
        if bytes == 0 {
            return Ok(core::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8);
        }
        let _st = self.enter("cuCtxSetCurrent")?;
        // SAFETY: the context is current; flags 0 = page-locked memory of this context.
        let p = unsafe { result::malloc_host(bytes, 0) }.map_err(|e| driver_error("cuMemHostAlloc", None, e))? as *mut u8;
        // SAFETY: `p` holds `bytes` writable bytes.
        unsafe { core::ptr::write_bytes(p, 0, bytes) };
        Ok(p)
    }

    unsafe fn free_pinned(&self, ptr: *mut u8, bytes: usize) {
        if bytes == 0 {
            return;
        }
        if let Ok(_st) = self.enter("cuCtxSetCurrent") {
            // SAFETY: allocated by `alloc_pinned`, freed once, not in use
            // (caller's contract).
            let _ = unsafe { result::free_host(ptr as *mut c_void) };
        }
    }

    unsafe fn copy_to_device(&self, dst: u64, src: *const u8, bytes: usize) -> Result<()> {
        let mut guard = self.enter("cuCtxSetCurrent")?;
        let st = &mut *guard;
        // Large and pageable: through the staging pipeline, in our stream,
        // which nothing else uses while we hold the lock.
        // SAFETY: the context is current (`enter`); the caller's contract
        // covers `dst` and `src`.
        if let Some(r) = unsafe { st.xfer.upload(st.stream, dst, src, bytes) } {
            return r.map_err(|(op, e)| driver_error(op, None, e));
        }
        // cuMemcpyHtoD from pageable memory may return before its DMA lands
        // (CUDA Driver API, "API synchronization behavior"), and kernels in
        // our non-blocking stream would not wait for it: wait for the legacy
        // stream it was issued in. (Every launch waits for its kernel, so
        // nothing earlier is still running.)
        // SAFETY: caller's contract; `src` stays valid until the wait returns.
        unsafe { sys::cuMemcpyHtoD_v2(dst, src as *const c_void, bytes) }
            .result()
            .and_then(|()| unsafe { result::stream::synchronize(core::ptr::null_mut()) })
            .map_err(|e| driver_error("cuMemcpyHtoD", None, e))
    }

    fn global(&self, symbol: &str, bytes: usize, _host: *mut u8) -> Result<u64> {
        let guard = self.enter("cuCtxSetCurrent")?;
        let missing = |reason: String| Error::Memory { op: "copy a DeviceGlobal", reason };
        let name = std::ffi::CString::new(symbol).map_err(|_| missing(format!("`{symbol}` is not a symbol name")))?;
        let mut addr: sys::CUdeviceptr = 0;
        let mut size = 0usize;
        // SAFETY: the module is loaded in the current context (`enter`);
        // the out-pointers are valid.
        unsafe { sys::cuModuleGetGlobal_v2(&mut addr, &mut size, guard.module, name.as_ptr()) }.result().map_err(
            |e| {
                missing(format!(
                    "the device image has no global `{symbol}` (cuModuleGetGlobal: {e:?}); rebuild with `cargo offload` so \
                     that the image and the binary come from the same source"
                ))
            },
        )?;
        if size != bytes {
            return Err(missing(format!(
                "the device image's global `{symbol}` has {size} bytes, the host's type {bytes}: the image was built \
                 from other source; rebuild with `cargo offload`"
            )));
        }
        Ok(addr)
    }

    unsafe fn copy_from_device(&self, dst: *mut u8, src: u64, bytes: usize) -> Result<()> {
        let mut guard = self.enter("cuCtxSetCurrent")?;
        let st = &mut *guard;
        // Every launch has waited for its kernel, so the data is final.
        // Large and pageable: through the staging pipeline (see above).
        // SAFETY: the context is current (`enter`); the caller's contract
        // covers `dst` and `src`.
        if let Some(r) = unsafe { st.xfer.download(st.stream, dst, src, bytes) } {
            return r.map_err(|(op, e)| driver_error(op, None, e));
        }
        // Device to pageable host memory returns only once the copy is done.
        // SAFETY: caller's contract.
        unsafe { sys::cuMemcpyDtoH_v2(dst as *mut c_void, src, bytes) }
            .result()
            .map_err(|e| driver_error("cuMemcpyDtoH", None, e))
    }

    fn launch_impl(
        &self,
        kernel: &'static KernelInfo,
        cfg: &LaunchConfig,
        args: &[ArgSpec<'_>],
        _host: &(dyn Fn() + Sync),
    ) -> Result<()> {
        // The per-launch path allocates nothing on the heap and formats no
        // strings unless it fails: the scratch vectors live in `State` and
        // keep their capacity, the kernel's name is built only for errors.
        let err = |op: &'static str, e: DriverError| driver_error(op, Some(&kernel.path()), e);
        let mut guard = self.enter("cuCtxSetCurrent")?;
        let st = &mut *guard;
        let function = st.function(kernel)?;
        st.allow_dynamic_shared(kernel, function, cfg.shared_mem_bytes)?;
        let f = function.f;

        // Map: allocate and copy each host argument to the device; resident
        // buffers are used in place.
        let mut allocs = Allocations(core::mem::take(&mut st.allocs));
        let device_ptrs = &mut st.device_ptrs;
        device_ptrs.clear();
        for a in args {
            match a.kind {
                ArgKind::Host { ptr, bytes, atomic, .. } if bytes > 0 => {
                    let (size, d) = match st.cache.take(bytes) {
                        Some(block) => block,
                        None => (bytes, st.cache.alloc(bytes).map_err(|e| err("cuMemAlloc", e))?),
                    };
                    allocs.0.push((size, d));
                    // Large and pageable: through the staging pipeline, which
                    // returns once the data has landed. Atomics (which other
                    // host threads may change meanwhile) are left to the
                    // driver, as before.
                    let staged = if atomic == 0 {
                        // SAFETY: `ptr` is valid for reads of `bytes` bytes: it
                        // comes from a reference the launcher borrows for the
                        // whole launch; `d` holds at least `bytes`; the context
                        // is current.
                        unsafe { st.xfer.upload(st.stream, d, ptr as *const u8, bytes) }
                    } else {
                        None
                    };
                    match staged {
                        Some(r) => r.map_err(|(op, e)| err(op, e))?,
                        // SAFETY: as above. In the launch stream, so the kernel
                        // starts after the copy has landed (a plain cuMemcpyHtoD
                        // from pageable memory may return before its DMA
                        // completes, and our non-blocking stream would not wait
                        // for it).
                        None => unsafe { sys::cuMemcpyHtoDAsync_v2(d, ptr as *const c_void, bytes, st.stream) }
                            .result()
                            .map_err(|e| err("cuMemcpyHtoDAsync", e))?,
                    }
                    device_ptrs.push(d);
                }
                ArgKind::Resident { addr, .. } => device_ptrs.push(addr),
                // Nothing to copy (an empty slice): the kernel gets the host
                // slice's own pointer, which is non-null and aligned as the
                // entry point's `&[T; 0]` parameter requires, and never
                // dereferences it.
                ArgKind::Host { ptr, .. } => device_ptrs.push(ptr as u64),
                ArgKind::Value { .. } => device_ptrs.push(0),
            }
        }

        // Parameters: one slot per scalar the entry point takes. `slots` is
        // filled completely (and not resized) before any pointer into it is
        // taken.
        let slots = &mut st.slots;
        slots.clear();
        for (a, &d) in args.iter().zip(device_ptrs.iter()) {
            match a.kind {
                ArgKind::Value { .. } => {}
                ArgKind::Host { len, pass_len, .. } | ArgKind::Resident { len, pass_len, .. } => {
                    slots.push(d);
                    if pass_len {
                        slots.push(len as u64);
                    }
                }
            }
        }
        let params = &mut st.params;
        params.clear();
        let mut next = 0;
        for a in args {
            match a.kind {
                ArgKind::Value { ptr } => params.push(ptr as *mut c_void),
                ArgKind::Host { pass_len, .. } | ArgKind::Resident { pass_len, .. } => {
                    params.push(&mut slots[next] as *mut u64 as *mut c_void);
                    next += 1;
                    if pass_len {
                        params.push(&mut slots[next] as *mut u64 as *mut c_void);
                        next += 1;
                    }
                }
            }
        }

        // The entry point's last, hidden parameter: the launch shape (see
        // `__private::kernel_entry`).
        let mut shape = crate::__private::launch_shape(cfg);
        params.push(&mut shape as *mut u32 as *mut c_void);
        let g = cfg.grid;
        let b = cfg.block;
        // SAFETY: `f` belongs to the loaded module; `params` has one pointer
        // per parameter of the entry point generated from the same kernel
        // signature (value → its bytes, mapped → device pointer [, length],
        // then the launch shape), each valid until the stream is synchronized
        // below (the driver copies the values at the call).
        unsafe { result::launch_kernel(f, (g.x, g.y, g.z), (b.x, b.y, b.z), cfg.shared_mem_bytes, st.stream, params) }
            .map_err(|e| err("cuLaunchKernel", e))?;
        // SAFETY: the stream belongs to the current context.
        if let Err(e) = unsafe { result::stream::synchronize(st.stream) } {
            return Err(st.after_failed_kernel(&kernel.path(), e, allocs));
        }
        // A panicking thread records the panic and exits; the kernel itself
        // completes. Map back anyway (as on the host fallback, the other
        // threads' writes are visible), then report the panic.
        let panicked = st.panic.as_ref().and_then(|p| p.take());

        // Map back: copy `&mut` arguments (and atomics) to the host.
        for (a, &d) in args.iter().zip(st.device_ptrs.iter()) {
            if let ArgKind::Host { ptr, bytes, writeback: true, atomic, .. } = a.kind {
                if bytes == 0 {
                    continue;
                }
                if atomic == 0 {
                    // SAFETY: `ptr` is valid for writes of `bytes` bytes (an
                    // exclusive borrow held by the launcher, plain data); `d`
                    // holds as many; the kernel has finished; the context is
                    // current.
                    if let Some(r) = unsafe { st.xfer.download(st.stream, ptr, d, bytes) } {
                        r.map_err(|(op, e)| err(op, e))?;
                        continue;
                    }
                }
                // SAFETY: `ptr` is valid for writes of `bytes` bytes (an
                // exclusive borrow held by the launcher) or points to as
                // many bytes of atomics (`atomic` != 0); `d` holds as many.
                unsafe { cuda_recover::copy_back(ptr, d, bytes, atomic, &kernel.path())? };
            }
        }
        // Keep this launch's device memory for the next ones.
        st.allocs = allocs.release(&mut st.cache);
        match panicked {
            Some(recorded) => Err(recorded.into_error(&kernel.path(), st.stack_bytes)),
            None => Ok(()),
        }
    }
}

impl State {
    /// A kernel failed while running (an illegal address, a trap): report
    /// the recorded panic if there is one, then rebuild the context, which
    /// such errors leave unusable ("sticky"), so that later launches work
    /// if CUDA allows it. The launch's device memory (and the argument
    /// cache) went with the old context, so it is forgotten, not freed.
    fn after_failed_kernel(&mut self, kernel: &str, e: DriverError, mut allocs: Allocations) -> Error {
        allocs.0.clear();
        self.cache.free.clear();
        self.cache.bytes = 0;
        let err = cuda_recover::failed_launch_error(self.panic.as_ref(), kernel, e, self.stack_bytes);
        if let Err(rebuild) = self.rebuild() {
            return Error::Driver {
                op: "rebuilding the CUDA context after a failed kernel",
                kernel: Some(kernel.into()),
                code: 0,
                name: "CUDA_ERROR_UNKNOWN".into(),
                text: format!(
                    "{rebuild}; the kernel's own failure was: {err}. CUDA leaves a context in this state unusable \
                     until the process ends: restart the program"
                ),
                log: None,
            };
        }
        err
    }

    /// Resets the primary context (freeing everything in it, the panic
    /// record included), retains it again and reloads the module.
    fn rebuild(&mut self) -> Result<()> {
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
            self.ctx = result::primary_ctx::retain(self.dev).map_err(|e| driver_error("cuDevicePrimaryCtxRetain", None, e))?;
            result::ctx::set_current(self.ctx).map_err(|e| driver_error("cuCtxSetCurrent", None, e))?;
        }
        self.functions.clear();
        self.panic = None;
        self.module = load_module(&self.image)?;
        self.stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver_error("cuStreamCreate", None, e))?;
        self.stack_bytes = cuda_recover::configure_context()?;
        // The new context's stacks: measured again (same module, new
        // context, and its limit set anew).
        cuda_recover::install_stack_floor(self.module, self.stream)?;
        self.panic = PanicSlot::install(self.module);
        Ok(())
    }
}
