//! CUDA backend: what happens around a kernel that fails — panic records
//! (see `panic_record`), rebuilding the context after a sticky error, the
//! atomic copy-back of `&[Atomic*]` arguments, and per-context settings.
//! Kept apart from the launch path in `cuda.rs`.

use core::ffi::c_void;
use std::ffi::CString;
use std::format;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::vec;

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use super::cuda::driver_error;
use crate::error::{Error, Result};
use crate::panic_record::{PanicRecord, DONE, FILE_BYTES, MESSAGE_BYTES, SLOT_SYMBOL, STACK_OVERFLOW};

/// Sets the per-thread stack of kernels (`CU_LIMIT_STACK_SIZE`) to 8 KiB
/// unless `OFFLOAD_CUDA_STACK_BYTES` says otherwise, and returns the size
/// the driver chose (`cuCtxGetLimit`). Kernels that format (`println!`,
/// panic messages) call through `dyn fmt::Write`, so ptxas cannot bound
/// their stack and the driver's 1 KiB default can overflow. Code whose
/// stack need ptxas can bound needs no setting: the driver grows the stack
/// for such a launch itself (CUDA Driver API, `cuCtxSetLimit`); recursion,
/// which it cannot bound, gets this much and the device link's recursion
/// checks keep it from going past the end (see `offload-linker`'s
/// `recursion`).
pub(crate) fn configure_context() -> Result<usize> {
    let bytes = std::env::var("OFFLOAD_CUDA_STACK_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(8 * 1024);
    // SAFETY: sets a limit of the current context.
    unsafe { sys::cuCtxSetLimit(sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes) }
        .result()
        .map_err(|e| driver_error("cuCtxSetLimit(CU_LIMIT_STACK_SIZE)", None, e))?;
    let mut set = bytes;
    // SAFETY: reads a limit of the current context into `set`.
    let _ = unsafe { sys::cuCtxGetLimit(&mut set, sys::CUlimit::CU_LIMIT_STACK_SIZE) };
    Ok(set)
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
    /// The launch's error: [`Error::StackOverflow`] for an overflow (with
    /// the context's per-thread stack, `stack_bytes`), else
    /// [`Error::KernelPanic`].
    pub(crate) fn into_error(self, kernel: &str, stack_bytes: usize) -> Error {
        let Recorded { message, file, line, column, block, thread } = self;
        if message == STACK_OVERFLOW {
            return Error::StackOverflow {
                kernel: kernel.to_string(),
                block,
                thread,
                detail: format!(
                    "the recursion in `{file}` would go past the end of the {stack_bytes}-byte stack of each GPU \
                     thread (CU_LIMIT_STACK_SIZE); recurse less deeply, or raise OFFLOAD_CUDA_STACK_BYTES"
                ),
            };
        }
        let location = format!("{file}:{line}:{column}");
        Error::KernelPanic { kernel: kernel.to_string(), message, location, block, thread }
    }
}

/// The panic record of the current context: page-locked host memory that the
/// device writes through its mapped address.
pub(crate) struct PanicSlot {
    host: *mut PanicRecord,
}

impl PanicSlot {
    /// Allocates a record and stores its device address in the module's
    /// `__offload_global_panic_slot`. `None` if the image has no such global
    /// (it was built by an older offload) or mapping is impossible: panics
    /// then still fail the launch, without message.
    pub(crate) fn install(module: sys::CUmodule) -> Option<PanicSlot> {
        let name = CString::new(SLOT_SYMBOL).expect("no NUL");
        let mut global: sys::CUdeviceptr = 0;
        let mut size = 0usize;
        // SAFETY: `module` is loaded in the current context; out-pointers are valid.
        unsafe { sys::cuModuleGetGlobal_v2(&mut global, &mut size, module, name.as_ptr()) }.result().ok()?;
        if size != 8 {
            return None;
        }
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
        let copied = mapped.and_then(|()| {
            unsafe { sys::cuMemcpyHtoD_v2(global, &device as *const u64 as *const c_void, 8) }.result()
        });
        // The copy from pageable memory may still be in flight: wait for it
        // before any kernel (in another stream) can read the global.
        // SAFETY: synchronizes the current context.
        let copied = copied.and_then(|()| unsafe { sys::cuCtxSynchronize() }.result());
        if copied.is_err() {
            // SAFETY: allocated above, not used by any kernel yet.
            let _ = unsafe { sys::cuMemFreeHost(host) };
            return None;
        }
        Some(PanicSlot { host: host as *mut PanicRecord })
    }

    /// The record, if a thread published one, and empties the slot for the
    /// next launch. Call only when no kernel runs.
    pub(crate) fn take(&self) -> Option<Recorded> {
        let r = self.read()?;
        // SAFETY: no kernel runs (the stream is synchronized); the record is
        // live host memory; zero is the empty state.
        unsafe { core::ptr::write_bytes(self.host as *mut u8, 0, core::mem::size_of::<PanicRecord>()) };
        Some(r)
    }

    /// The record, if a thread published one. Readable after a sticky error:
    /// it is host memory.
    pub(crate) fn read(&self) -> Option<Recorded> {
        let rec = self.host;
        // SAFETY: `rec` is a live record (freed only by a context reset,
        // which happens after this read); `state` is accessed atomically,
        // the rest only after observing DONE (acquire), which the device
        // published after a system-scope fence.
        unsafe {
            let state = AtomicU32::from_ptr(core::ptr::addr_of_mut!((*rec).state));
            if state.load(Ordering::Acquire) != DONE {
                return None;
            }
            let r = &*rec;
            let message = if r.message_addr != 0 {
                device_string(r.message_addr, r.message_len)
            } else {
                let msg_len = (r.message_len as usize).min(MESSAGE_BYTES);
                let mut m = String::from_utf8_lossy(&r.message[..msg_len]).into_owned();
                if r.truncated != 0 {
                    m.push_str("...");
                }
                m
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
pub(crate) unsafe fn copy_back(ptr: *mut u8, d: sys::CUdeviceptr, bytes: usize, atomic: u8, kernel: &str) -> Result<()> {
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
