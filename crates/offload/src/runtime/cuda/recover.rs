//! CUDA backend: what happens around a kernel that fails — panic records
//! (see `panic_record`), rebuilding the context after a sticky error, the
//! atomic copy-back of `&[Atomic*]` arguments, and per-context settings.
//! Kept apart from the launch path in `launch`.

use core::ffi::c_void;
use std::ffi::CString;
use std::format;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::vec;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use offload_image::{Image, ImageKind};

use super::error::driver_error;
use crate::report::panic_args::PanicSite;
use crate::report::panic_format::format_message;
use crate::report::panic_record::{
    core_message, PanicRecord, CLAIM_SYMBOL, DONE, EMPTY, FILE_BYTES, FORMAT, MESSAGE_BYTES, SLOT_SYMBOL,
    STACK_OVERFLOW, TEXT,
};
use crate::runtime::error::{Error, Result};

/// Sets the per-thread stack of kernels (`CU_LIMIT_STACK_SIZE`) to 8 KiB
/// unless `OFFLOAD_CUDA_STACK_BYTES` says otherwise, and returns the size
/// the driver chose (`cuCtxGetLimit`). Kernels that format (`println!`,
/// panic messages) call through `dyn fmt::Write`, so ptxas cannot bound
/// their stack and the driver's 1 KiB default can overflow. Code whose
/// stack need ptxas can bound needs no setting: the driver grows the stack
/// for such a launch itself (CUDA Driver API, `cuCtxSetLimit`); recursion,
/// which it cannot bound, gets this much and the device link's recursion
/// checks keep it from going past the end (see `offload-linker`'s
/// `recursion`), once [`install_stack_floor`] has told them where the end
/// is: call that after this, with the context's module loaded.
pub(crate) fn configure_context() -> Result<usize> {
    let bytes =
        std::env::var("OFFLOAD_CUDA_STACK_BYTES").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(8 * 1024);
    // SAFETY: sets a limit of the current context.
    unsafe { sys::cuCtxSetLimit(sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes) }
        .result()
        .map_err(|e| driver_error("cuCtxSetLimit(CU_LIMIT_STACK_SIZE)", None, e))?;
    stack_limit().map_err(|e| driver_error("cuCtxGetLimit(CU_LIMIT_STACK_SIZE)", None, e))
}

/// `CU_LIMIT_STACK_SIZE` of the current context, in bytes.
fn stack_limit() -> core::result::Result<usize, DriverError> {
    let mut bytes = 0usize;
    // SAFETY: reads a limit of the current context into `bytes`.
    unsafe { sys::cuCtxGetLimit(&mut bytes, sys::CUlimit::CU_LIMIT_STACK_SIZE) }.result()?;
    Ok(bytes)
}

/// The stack probe kernel the device link adds to modules with recursion
/// checks (offload-linker: `recursion::PROBE_KERNEL`).
const PROBE_KERNEL: &str = "__offload_stack_probe";
/// The device global the recursion checks compare with (offload-linker:
/// `recursion::FLOOR_GLOBAL`; `report::gpu::__offload_stack_floor`).
const FLOOR_GLOBAL: &str = "__offload_stack_floor";
/// Bytes added to the measured floor for the probe's own frame: the probe
/// reports the local address of a local in its frame, `T' = T - 8` with
/// ptxas 12.x/13.x (`LDC R1, c[0x0][0x28]; VIADD R1, R1, -8`), where `T`
/// is where every kernel's stack starts; `T' - L` is thus up to a frame
/// below the true floor `T - L`. 64 covers a larger probe frame; a floor
/// that is too high only makes the check fire that much early.
const PROBE_SLACK: u64 = 64;

/// Measures where a GPU thread's stack ends and gives the module's
/// recursion checks that floor, for the current context and its
/// `CU_LIMIT_STACK_SIZE` (call it again after changing either). Launches
/// the module's stack probe on one thread in `stream` and waits for it;
/// the probe writes the local address at the top of its own frame, `T'`
/// (see `offload-linker`'s `recursion`). The stack of every kernel of the
/// context starts at the same local address `T` (the driver's, SASS
/// `LDC R1, c[0x0][0x28]`) and is `L` = `CU_LIMIT_STACK_SIZE` bytes:
/// `[T - L, T)`, so the floor is `T' + PROBE_SLACK - L`, written to the
/// module's `__offload_stack_floor` (`cuModuleGetGlobal`, then a copy that
/// has landed when this returns).
///
/// `probe`: whether the module has the probe, from the image's entry list
/// ([`has_stack_probe`]); `Some(false)` skips the driver entirely, so that
/// a module without recursion checks makes no failing driver call
/// (compute-sanitizer reports every one: `CUDA_ERROR_NOT_FOUND` from
/// `cuModuleGetFunction`). `None` (not known) looks the probe up and takes
/// `CUDA_ERROR_NOT_FOUND` as "no probe".
///
/// Returns the floor, a local address; `None` if the module has no probe
/// (no recursion checks, or an image built by an older `offload`): then
/// there is nothing to do.
///
/// # Errors
/// [`Error::BadImage`] for a module with the probe but no 8-byte floor
/// global; [`Error::Driver`] if the probe's launch or a copy fails.
///
/// Where `T' + PROBE_SLACK <= L` (a GPU whose stacks end at local address
/// 0, the layout the checks assume without a floor) the floor is 0. It is
/// conservative when the driver gives a launch more stack than `L` ("The
/// driver automatically increases the per-thread stack size for each
/// kernel launch as needed. This size isn't reset back to the original
/// value after each launch", `cuCtxSetLimit`; for kernels whose static
/// stack need is larger): the checks then fire early, never late. Probing
/// once per module load, not per launch, assumes that `T` depends neither
/// on the kernel nor on `L` (on an H200 `T` = 0xFFFDC0 for `L` = 1 and
/// 64 KiB; `bench/probe/stack.cu` checks both on a GPU); `L` only changes
/// in [`configure_context`] and, upwards, by the driver.
pub(crate) fn install_stack_floor(
    module: sys::CUmodule,
    stream: sys::CUstream,
    probe: Option<bool>,
) -> Result<Option<u64>> {
    if probe == Some(false) {
        return Ok(None);
    }
    let probe_name = CString::new(PROBE_KERNEL).expect("no NUL");
    // SAFETY: `module` is loaded in the current context.
    let probe = match unsafe { result::module::get_function(module, probe_name) } {
        Ok(f) => f,
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND => return Ok(None),
        Err(e) => return Err(driver_error("cuModuleGetFunction(__offload_stack_probe)", None, e)),
    };
    let floor_name = CString::new(FLOOR_GLOBAL).expect("no NUL");
    let mut global: sys::CUdeviceptr = 0;
    let mut size = 0usize;
    // SAFETY: `module` is loaded in the current context; out-pointers are valid.
    let found = unsafe { sys::cuModuleGetGlobal_v2(&mut global, &mut size, module, floor_name.as_ptr()) }.result();
    if found.is_err() || size != 8 {
        return Err(Error::BadImage(
            format!(
                "the device image has the stack probe `{PROBE_KERNEL}` but no 8-byte global `{FLOOR_GLOBAL}` for its \
             recursion checks; rebuild with `cargo offload`"
            )
            .into(),
        ));
    }
    let launch = |op: &'static str, e: DriverError| driver_error(op, Some(PROBE_KERNEL), e);
    // SAFETY: allocating has no preconditions beyond a current context.
    let out = unsafe { result::malloc_sync(8) }.map_err(|e| launch("cuMemAlloc", e))?;
    let mut out_param = out;
    let mut params = [&mut out_param as *mut sys::CUdeviceptr as *mut c_void];
    // SAFETY: the probe takes one pointer parameter (`ptr %out`), which
    // points to the 8 bytes just allocated; `out_param` lives until the
    // launch returns (the driver copies parameters at the call).
    let ran = unsafe { result::launch_kernel(probe, (1, 1, 1), (1, 1, 1), 0, stream, &mut params) }
        .map_err(|e| launch("cuLaunchKernel", e))
        // SAFETY: `stream` belongs to the current context.
        .and_then(|()| unsafe { result::stream::synchronize(stream) }.map_err(|e| launch("cuStreamSynchronize", e)));
    let mut top = 0u64;
    // SAFETY: `out` holds 8 bytes, written by the finished probe; `top` is 8 bytes.
    let read = ran.and_then(|()| {
        unsafe { sys::cuMemcpyDtoH_v2(&mut top as *mut u64 as *mut c_void, out, 8) }
            .result()
            .map_err(|e| launch("cuMemcpyDtoH", e))
    });
    // SAFETY: allocated above; the probe has finished (or never started).
    let _ = unsafe { result::free_sync(out) };
    read?;
    let limit = stack_limit().map_err(|e| driver_error("cuCtxGetLimit(CU_LIMIT_STACK_SIZE)", None, e))?;
    let floor = top.saturating_add(PROBE_SLACK).saturating_sub(limit as u64);
    // SAFETY: `global` is the module's 8-byte floor; no kernel runs (the
    // probe has finished and launches hold the state's lock); the copy from
    // pageable memory is waited for before any kernel can read it.
    unsafe { sys::cuMemcpyHtoD_v2(global, &floor as *const u64 as *const c_void, 8) }
        .result()
        .and_then(|()| unsafe { sys::cuCtxSynchronize() }.result())
        .map_err(|e| driver_error("cuMemcpyHtoD(__offload_stack_floor)", None, e))?;
    Ok(Some(floor))
}

/// Whether the device link put its stack probe (and so recursion checks)
/// into the image `loaded`, from the entry points (`.entry`) of the
/// bundle's PTX for the same target and architecture (`loaded` itself, or
/// the PTX its cubin was assembled from: `cargo offload` embeds both);
/// `None` if the bundle has no such PTX.
pub(crate) fn has_stack_probe(images: &[Image<'_>], loaded: &Image<'_>) -> Option<bool> {
    let ptx = images.iter().find(|i| i.kind == ImageKind::Ptx && i.triple == loaded.triple && i.arch == loaded.arch)?;
    let text = String::from_utf8_lossy(ptx.bytes);
    Some(offload_image::ptx_entries(&text).iter().any(|e| e == PROBE_KERNEL))
}

/// What a GPU thread recorded before it exited: a panic, or a stack
/// overflow caught by a recursion check (see `panic_record`).
pub(crate) struct Recorded {
    message: String,
    file: String,
    line: u32,
    column: u32,
    block: String,
    thread: String,
}

impl Recorded {
    /// Where the thread panicked: the file and line of its
    /// `core::panic::Location` (line 0 for a stack overflow, whose `file`
    /// is the recursive function's name).
    pub(crate) fn location(&self) -> (&str, u32) {
        (&self.file, self.line)
    }

    /// A panic record at `file:line` with `message`, as a test's stand-in
    /// for one read from the device.
    #[cfg(test)]
    pub(crate) fn at(file: &str, line: u32, message: &str) -> Recorded {
        let (block, thread) = (String::from("(0, 0, 0)"), String::from("(1, 0, 0)"));
        Recorded { message: message.into(), file: file.into(), line, column: 9, block, thread }
    }

    /// The panic's message, as recorded.
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The launch's error: [`Error::StackOverflow`] for an overflow (with
    /// the context's per-thread stack, `stack_bytes`), else
    /// [`Error::KernelPanic`].
    pub(crate) fn into_error(self, kernel: &str, stack_bytes: usize) -> Error {
        let Recorded { message, file, line, column, block, thread } = self;
        if message == STACK_OVERFLOW {
            return Error::from(crate::error::StackOverflow {
                kernel: kernel.to_string(),
                block,
                thread,
                detail: format!(
                    "the recursion in `{file}` would go past the end of the {stack_bytes}-byte stack of each GPU \
                     thread (CU_LIMIT_STACK_SIZE); recurse less deeply, or raise OFFLOAD_CUDA_STACK_BYTES"
                ),
            });
        }
        let location = format!("{file}:{line}:{column}");
        Error::from(crate::error::KernelPanic { kernel: kernel.to_string(), message, location, block, thread })
    }
}

/// The panic record of the current context: page-locked host memory that the
/// device writes through its mapped address, and the module's claim word
/// (device memory) that decides which thread writes it.
pub(crate) struct PanicSlot {
    host: *mut PanicRecord,
    /// The module's `__offload_global_panic_claim` (4 bytes); `None` for an
    /// image built by an older offload, whose device code claims the record
    /// itself.
    claim: Option<sys::CUdeviceptr>,
    /// A non-blocking stream of the context for resetting `claim`, used by
    /// nothing else: a check must not queue behind a blocking launch's
    /// kernel in the context's own stream (see `panics`).
    stream: sys::CUstream,
}

impl PanicSlot {
    /// Allocates a record and stores its device address in the module's
    /// `__offload_global_panic_slot`. `None` if the image has no such global
    /// (it was built by an older offload) or mapping is impossible: panics
    /// then still fail the launch, without message. The module's claim word
    /// is `EMPTY` as loaded (see `report::gpu::__offload_global_panic_claim`).
    /// Makes the record's own stream (see [`PanicSlot::take`]). The memory
    /// and the stream are freed with the context (`cuDevicePrimaryCtxReset`).
    pub(crate) fn install(module: sys::CUmodule) -> Option<PanicSlot> {
        let global = module_global(module, SLOT_SYMBOL, 8)?;
        let claim = module_global(module, CLAIM_SYMBOL, 4);
        let mut host: *mut c_void = core::ptr::null_mut();
        // SAFETY: allocates page-locked, device-mapped host memory.
        unsafe { sys::cuMemHostAlloc(&mut host, core::mem::size_of::<PanicRecord>(), sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .result()
            .ok()?;
        // SAFETY: `host` holds a whole record; zero is the empty state.
        unsafe { core::ptr::write_bytes(host as *mut u8, 0, core::mem::size_of::<PanicRecord>()) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` came from `cuMemHostAlloc(DEVICEMAP)`.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result();
        // SAFETY: `global` is an 8-byte device global; we copy 8 bytes.
        let copied = mapped
            .and_then(|()| unsafe { sys::cuMemcpyHtoD_v2(global, &device as *const u64 as *const c_void, 8) }.result());
        // The copy from pageable memory may still be in flight: wait for it
        // before any kernel (in another stream) can read the global.
        // SAFETY: synchronizes the current context.
        let copied = copied.and_then(|()| unsafe { sys::cuCtxSynchronize() }.result());
        let stream = copied.and_then(|()| result::stream::create(result::stream::StreamKind::NonBlocking));
        let Ok(stream) = stream else {
            // SAFETY: allocated above, not used by any kernel yet.
            let _ = unsafe { sys::cuMemFreeHost(host) };
            return None;
        };
        Some(PanicSlot { host: host as *mut PanicRecord, claim, stream })
    }

    /// The record, if a thread published one, and empties the slot for the
    /// next failure: the record zeroed, then the claim word set back to
    /// `EMPTY` (`cuMemsetD32Async` in the record's own stream, waited for,
    /// so that every launch after this sees it; never behind a running
    /// kernel's stream). Call after waiting for the work that may have
    /// recorded it, with the context current. Without a record nothing
    /// reaches the device.
    ///
    /// Kernels of other queues may still run: none of their threads writes
    /// the record meanwhile, since the claim stays `DONE` (set before the
    /// record was published) until the reset, which comes after the
    /// zeroing.
    pub(crate) fn take(&self) -> Option<Recorded> {
        let stream = self.stream;
        let r = self.read()?;
        // SAFETY: the record is live host memory that no device thread
        // writes now (the claim is `DONE`, see above); zero is the empty
        // state.
        unsafe { core::ptr::write_bytes(self.host as *mut u8, 0, core::mem::size_of::<PanicRecord>()) };
        if let Some(claim) = self.claim {
            // SAFETY: `claim` is the module's 4-byte global of the current
            // context; `stream` belongs to it.
            let reset = unsafe { sys::cuMemsetD32Async(claim, EMPTY, 1, stream) }
                .result()
                // SAFETY: as above.
                .and_then(|()| unsafe { result::stream::synchronize(stream) });
            if let Err(e) = reset {
                // The record is read; only later failures are at stake.
                std::eprintln!(
                    "offload: warning: could not reset the GPU panic record's claim (cuMemsetD32Async: {e}); \
                     later panics in kernels of this context may go unreported"
                );
            }
        }
        Some(r)
    }

    /// The record, if a thread published one. Readable after a sticky error:
    /// it is host memory.
    pub(crate) fn read(&self) -> Option<Recorded> {
        let rec = self.host;
        // SAFETY: `rec` is a live record: freed only by a context reset,
        // and a rebuild drops the slot under the panic lock (which the
        // caller holds, see `panics`) before it resets. `state` is
        // accessed atomically, the rest only after observing DONE
        // (acquire), which the device published after a system-scope
        // fence.
        unsafe {
            let state = AtomicU32::from_ptr(core::ptr::addr_of_mut!((*rec).state));
            if state.load(Ordering::Acquire) != DONE {
                return None;
            }
            let r = &*rec;
            let message = match r.kind {
                TEXT if r.message_addr != 0 => device_string(r.message_addr, r.message_len),
                TEXT => {
                    let msg_len = (r.message_len as usize).min(MESSAGE_BYTES);
                    let mut m = String::from_utf8_lossy(&r.message[..msg_len]).into_owned();
                    if r.truncated != 0 {
                        m.push_str("...");
                    }
                    m
                }
                FORMAT => return Some(format_record(r)),
                kind => core_message(kind, [r.values[0], r.values[1], r.values[2]]).unwrap_or_else(|| {
                    format!("(a panic record of unknown kind {kind}: is the device image from another offload?)")
                }),
            };
            let file = if r.file_addr != 0 {
                device_string(r.file_addr, r.file_len)
            } else {
                String::from_utf8_lossy(&r.file[..(r.file_len as usize).min(FILE_BYTES)]).into_owned()
            };
            let block = format!("({}, {}, {})", r.block[0], r.block[1], r.block[2]);
            let thread = format!("({}, {}, {})", r.thread[0], r.thread[1], r.thread[2]);
            Some(Recorded { message, file, line: r.line, column: r.column, block, thread })
        }
    }
}

/// The report of a [`FORMAT`] record: its `PanicSite` (format string and
/// location), copied out of the image, and the message formatted with the
/// recorded values (`panic_format`).
fn format_record(r: &PanicRecord) -> Recorded {
    let mut site = core::mem::MaybeUninit::<PanicSite>::uninit();
    let size = core::mem::size_of::<PanicSite>();
    // SAFETY: `site` has `size` writable bytes; `message_addr` is the device
    // address of a `PanicSite` static of the module, which stays loaded.
    let copied = unsafe { sys::cuMemcpyDtoH_v2(site.as_mut_ptr() as *mut c_void, r.message_addr, size) }.result();
    let block = format!("({}, {}, {})", r.block[0], r.block[1], r.block[2]);
    let thread = format!("({}, {}, {})", r.thread[0], r.thread[1], r.thread[2]);
    let Ok(()) = copied else {
        let message = "<unreadable panic message>".into();
        return Recorded { message, file: "<unreadable>".into(), line: 0, column: 0, block, thread };
    };
    // SAFETY: the copy wrote every byte; every bit pattern is a valid
    // `PanicSite` (raw pointers, integers), whose pointers are device
    // addresses, only passed back to the driver.
    let site = unsafe { site.assume_init() };
    let fmt = device_string(site.fmt as u64, site.fmt_len as u32);
    let message = format_message(&fmt, r.tags, &r.values, &r.message);
    let file = device_string(site.file as u64, site.file_len as u32);
    Recorded { message, file, line: site.line, column: site.column, block, thread }
}

/// The address of the module's global `symbol` if it exists with `bytes`
/// bytes (`cuModuleGetGlobal`).
fn module_global(module: sys::CUmodule, symbol: &str, bytes: usize) -> Option<sys::CUdeviceptr> {
    let name = CString::new(symbol).expect("no NUL");
    let mut global: sys::CUdeviceptr = 0;
    let mut size = 0usize;
    // SAFETY: `module` is loaded in the current context; out-pointers are valid.
    unsafe { sys::cuModuleGetGlobal_v2(&mut global, &mut size, module, name.as_ptr()) }.result().ok()?;
    (size == bytes).then_some(global)
}

/// A string constant of the loaded image, by its device address (at most
/// 4 KiB of it); `<unreadable>` if the copy fails (after a sticky error).
fn device_string(addr: u64, len: u32) -> String {
    let len = (len as usize).min(4096);
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` holds `len` bytes; `addr` is a device address the kernel
    // recorded, of a constant of the module that stays loaded.
    let copied = unsafe { sys::cuMemcpyDtoH_v2(buf.as_mut_ptr() as *mut c_void, addr, len) }.result();
    match copied {
        Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
        Err(_) => "<unreadable>".into(),
    }
}

/// A GPU thread reports a warp collective in divergent code through the
/// panic record, with a message that starts with
/// [`divergence::PREFIX`](crate::report::divergence::PREFIX) (see `report::gpu`); such a
/// "panic" is [`Error::Divergence`], with the text the host fallback gives.
pub(crate) fn divergence_from_record(e: Error) -> Error {
    match e {
        Error::KernelPanic(p) if p.message.starts_with(crate::report::divergence::PREFIX) => {
            let crate::error::KernelPanic { kernel, message, block, .. } = *p;
            let reason = message[crate::report::divergence::PREFIX.len()..].into();
            Error::from(crate::error::Divergence { kernel, block, reason })
        }
        e => e,
    }
}

/// The error of a launch whose kernel failed while running: the panic the
/// device recorded if there is one, else the driver's error.
pub(crate) fn failed_launch_error(slot: Option<&PanicSlot>, kernel: &str, e: DriverError, stack_bytes: usize) -> Error {
    match slot.and_then(PanicSlot::read) {
        Some(recorded) => recorded.into_error(kernel, stack_bytes),
        None => driver_error("cuStreamSynchronize (kernel execution)", Some(kernel), e),
    }
}

/// Copies a mapped argument back to the host. Plain data: one
/// `cuMemcpyDtoH`. Atomics (`atomic` = 4 or 8 bytes): through a staging
/// buffer, then one relaxed atomic store per element, because other host
/// threads may use the caller's atomics concurrently (a plain copy would be a
/// data race).
///
/// # Safety
/// `ptr` is valid for writes of `bytes` bytes (plain) or points to
/// `bytes / atomic` live atomics of that size; `d` holds `bytes` bytes.
pub(crate) unsafe fn copy_back(
    ptr: *mut u8,
    d: sys::CUdeviceptr,
    bytes: usize,
    atomic: u8,
    kernel: &str,
) -> Result<()> {
    if atomic == 0 {
        // SAFETY: guaranteed by the caller.
        return unsafe { sys::cuMemcpyDtoH_v2(ptr as *mut c_void, d, bytes) }
            .result()
            .map_err(|e| driver_error("cuMemcpyDtoH", Some(kernel), e));
    }
    let mut staging = vec![0u8; bytes];
    // SAFETY: `staging` has `bytes` bytes.
    unsafe { sys::cuMemcpyDtoH_v2(staging.as_mut_ptr() as *mut c_void, d, bytes) }
        .result()
        .map_err(|e| driver_error("cuMemcpyDtoH", Some(kernel), e))?;
    match atomic {
        4 => {
            for (i, c) in staging.chunks_exact(4).enumerate() {
                let v = u32::from_ne_bytes(c.try_into().expect("4 bytes"));
                // SAFETY: element `i` of the caller's atomics (see above).
                unsafe { (*(ptr as *const AtomicU32).add(i)).store(v, Ordering::Relaxed) };
            }
        }
        _ => {
            for (i, c) in staging.chunks_exact(8).enumerate() {
                let v = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
                // SAFETY: element `i` of the caller's atomics (see above).
                unsafe { (*(ptr as *const AtomicU64).add(i)).store(v, Ordering::Relaxed) };
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(kind: ImageKind, arch: &'static str, bytes: &'static [u8]) -> Image<'static> {
        Image {
            kind,
            triple: "nvptx64-nvidia-cuda",
            arch,
            kernels: "__offload_kernel_app_k_1\n",
            bytes,
            checksum: None,
        }
    }

    /// The probe is looked up only where the image's PTX has it as an
    /// entry point, for a cubin through the PTX of its architecture.
    #[test]
    fn the_stack_probe_is_found_in_the_images_entry_list() {
        let with = image(
            ImageKind::Ptx,
            "sm_90",
            b".visible .entry __offload_kernel_app_k_1(\n)\n{\n}\n.visible .entry __offload_stack_probe(\n\t.param .u64 p\n)\n{\n}\n\0",
        );
        // A mention that is not an entry (a comment, a call) does not count.
        let without = image(
            ImageKind::Ptx,
            "sm_80",
            b"// __offload_stack_probe\n.visible .entry __offload_kernel_app_k_1(\n)\n{\n}\n\0",
        );
        let cubin90 = image(ImageKind::Cubin, "sm_90", b"\x7fELF");
        let cubin86 = image(ImageKind::Cubin, "sm_86", b"\x7fELF");
        let all = [with, cubin90, without, cubin86];
        assert_eq!(has_stack_probe(&all, &with), Some(true));
        assert_eq!(has_stack_probe(&all, &cubin90), Some(true), "through the PTX of sm_90");
        assert_eq!(has_stack_probe(&all, &without), Some(false));
        assert_eq!(has_stack_probe(&all, &cubin86), None, "no PTX of sm_86: not known");
    }
}
