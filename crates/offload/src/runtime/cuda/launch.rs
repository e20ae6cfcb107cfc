//! The CUDA backend's operations (the [`Backend`] trait): memory, copies,
//! device globals and the launch path. The launch maps its arguments
//! (device memory from the [`ArgCache`](super::memory::ArgCache), copy
//! host → device), launches, waits, copies `&mut` arguments back and
//! returns the memory to the cache; no heap allocation on the host.

use core::ffi::c_void;
use std::format;
use std::string::String;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use super::context::{Cuda, State};
use super::error::driver_error;
use super::memory::Allocations;
use super::panics::InFlight;
use super::recover;
use crate::device::config::LaunchConfig;
use crate::runtime::backend::Backend;
use crate::runtime::error::{Error, Result};
use crate::runtime::info::BackendInfo;
use crate::runtime::kernel::KernelInfo;
use crate::runtime::spec::{ArgKind, ArgSpec};

impl Backend for Cuda {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn generation(&self) -> u64 {
        Cuda::generation(self)
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<u64> {
        if bytes == 0 {
            return Ok(0);
        }
        let mut guard = self.enter("cuCtxSetCurrent")?;
        let st = &mut *guard;
        let stream = st.stream;
        let memory = st.cache.memory;
        let d = st.cache.alloc(bytes, stream).map_err(|e| driver_error(memory.alloc_op(), None, e))?;
        // Zeroed in the state's stream, where it was allocated, and waited
        // for there: then any stream may use it (see `pool`). Neither call
        // waits for other streams' work (a plain cuMemsetD8 is synchronous,
        // and runs on the legacy stream besides).
        // SAFETY: `d` holds `bytes` bytes, usable in `stream`, which belongs
        // to the current context.
        let zeroed = unsafe { result::memset_d8_async(d, 0, bytes, stream) }
            .and_then(|()| unsafe { result::stream::synchronize(stream) });
        if let Err(e) = zeroed {
            // SAFETY: `d` was just allocated from `memory` and is used by
            // nothing after this point of `stream`.
            let _ = unsafe { memory.free(d, stream) };
            return Err(driver_error("cuMemsetD8Async", None, e));
        }
        Ok(d)
    }

    unsafe fn free(&self, addr: u64, bytes: usize, generation: u64) {
        if bytes == 0 {
            return;
        }
        // Under the state's lock, so that no rebuild resets the context
        // between the generation's check and the free (the address may
        // belong to a newer allocation then).
        if let Some(st) = self.lock_generation(generation) {
            // SAFETY: allocated by `alloc_zeroed` from `st.cache.memory` in
            // this generation's context (current), freed once, not in use
            // by any work (caller's contract), so the free may be ordered
            // in any stream: the state's.
            let _ = unsafe { st.cache.memory.free(addr, st.stream) };
        }
    }

    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8> {
        if bytes == 0 {
            return Ok(core::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8);
        }
        let _st = self.enter("cuCtxSetCurrent")?;
        // SAFETY: the context is current. `CU_MEMHOSTALLOC_PORTABLE`: page-
        // locked for every context, not only this GPU's, so that queues of
        // every GPU copy from and to it at full speed (CUDA Driver API,
        // `cuMemHostAlloc`).
        let p = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(|e| driver_error("cuMemHostAlloc", None, e))? as *mut u8;
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
        // `DeviceGlobal::read`/`write` come after the kernels of every queue
        // (docs/async.md, section 3): `DeviceGlobal` waited for each queue
        // (`queue::wait_queues`), and the state's lock waits for another
        // thread's blocking launch. Not `cuCtxSynchronize`, which would
        // invalidate another thread's stream capture.
        let guard = self.enter("cuCtxSetCurrent")?;
        let missing = |reason: String| Error::from(crate::error::Memory { op: "copy a DeviceGlobal", reason });
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
        let mut guard = self.enter("cuCtxSetCurrent")?;
        let st = &mut *guard;
        let function = {
            let mut functions = st.functions.lock().unwrap_or_else(|e| e.into_inner());
            let function = functions.function(kernel)?;
            functions.allow_dynamic_shared(kernel, function, cfg.shared_mem_bytes)?;
            function
        };
        let allocs = st.map_args(kernel, args)?;
        st.fill_params(args);
        // The entry point's last, hidden parameter: the launch shape (see
        // `__private::kernel_entry`).
        let mut shape = crate::device::thread::launch_shape(cfg.block, cfg.grid);
        st.params.push(&mut shape as *mut u32 as *mut c_void);
        let (g, b) = (cfg.grid, cfg.block);
        // A candidate for the panic record from now until its check below:
        // queues' checks run meanwhile (they take only the panic lock, not
        // the state's, held here until the kernel has finished).
        let in_flight = InFlight::begin(&self.panics, kernel);
        // SAFETY: `function.f` belongs to the loaded module; `params` has one
        // pointer per parameter of the entry point generated from the same
        // kernel signature (value → its bytes, mapped → device pointer
        // [, length], then the launch shape), each valid until the stream is
        // synchronized below (the driver copies the values at the call).
        unsafe {
            result::launch_kernel(
                function.f,
                (g.x, g.y, g.z),
                (b.x, b.y, b.z),
                cfg.shared_mem_bytes,
                st.stream,
                &mut st.params,
            )
        }
        .map_err(|e| launch_error(kernel, "cuLaunchKernel", e))?;
        // SAFETY: the stream belongs to the current context.
        if let Err(e) = unsafe { result::stream::synchronize(st.stream) } {
            return Err(st.after_failed_kernel(&kernel.path(), e, allocs));
        }
        // A panicking thread records the panic and exits; the kernel itself
        // completes. Map back anyway (as on the host fallback, the other
        // threads' writes are visible), then report the panic.
        // The context has one panic record: with queued kernels not yet
        // checked, it may be theirs, then kept for their queue; a queue's
        // check may have found this kernel's and kept it for this launch
        // (see `queue::attrib`).
        let (panicked, stack_bytes) = in_flight.check();
        st.map_back(kernel, args)?;
        // Keep this launch's device memory for the next ones.
        st.allocs = allocs.release(&mut st.cache);
        match panicked {
            Some((name, recorded)) => Err(recorded.into_error(&name, stack_bytes)),
            None => Ok(()),
        }
    }
}

/// A failed driver call `op` of a launch of `kernel`.
fn launch_error(kernel: &KernelInfo, op: &'static str, e: DriverError) -> Error {
    driver_error(op, Some(&kernel.path()), e)
}

/// The steps of `launch_impl`, on the locked context (current on
/// this thread), in its scratch vectors.
impl State {
    /// Map: allocates device memory for each host argument (from the
    /// [`ArgCache`](super::memory::ArgCache)) and copies it there; resident
    /// buffers are used in place. Fills `device_ptrs`, one per argument, and
    /// returns the launch's allocations (freed if a later step fails).
    fn map_args(&mut self, kernel: &KernelInfo, args: &[ArgSpec<'_>]) -> Result<Allocations> {
        let mut allocs = Allocations::new(core::mem::take(&mut self.allocs), self.cache.memory, self.stream);
        self.device_ptrs.clear();
        for a in args {
            let d = match a.kind {
                ArgKind::Host { ptr, bytes, atomic, .. } if bytes > 0 => {
                    let (size, d) = match self.cache.take(bytes) {
                        Some(block) => block,
                        None => {
                            let d = self.cache.alloc(bytes, self.stream);
                            (bytes, d.map_err(|e| launch_error(kernel, self.cache.memory.alloc_op(), e))?)
                        }
                    };
                    allocs.blocks.push((size, d));
                    // SAFETY: `ptr` is valid for reads of `bytes` bytes: it
                    // comes from a reference the launcher borrows for the
                    // whole launch; `d` holds at least `bytes`; the context
                    // is current.
                    unsafe { self.copy_arg_in(kernel, d, ptr as *const u8, bytes, atomic)? };
                    d
                }
                ArgKind::Resident { addr, .. } => addr,
                // Nothing to copy (an empty slice): the kernel gets the host
                // slice's own pointer, which is non-null and aligned as the
                // entry point's `&[T; 0]` parameter requires, and never
                // dereferences it.
                ArgKind::Host { ptr, .. } => ptr as u64,
                ArgKind::Value { .. } => 0,
            };
            self.device_ptrs.push(d);
        }
        Ok(allocs)
    }

    /// Copies one host argument, `bytes` at `src`, to `d` before the
    /// kernel starts. Large and pageable: through the staging pipeline,
    /// which returns once the data has landed. Atomics (`atomic` != 0,
    /// which other host threads may change meanwhile) are left to the
    /// driver, as before.
    ///
    /// # Safety
    /// `src` is valid for reads of `bytes` bytes until the launch has
    /// finished, `d` holds at least `bytes`, and the context is current.
    unsafe fn copy_arg_in(
        &mut self,
        kernel: &KernelInfo,
        d: u64,
        src: *const u8,
        bytes: usize,
        atomic: u8,
    ) -> Result<()> {
        let staged = if atomic == 0 {
            // SAFETY: the caller's contract.
            unsafe { self.xfer.upload(self.stream, d, src, bytes) }
        } else {
            None
        };
        match staged {
            Some(r) => r.map_err(|(op, e)| launch_error(kernel, op, e)),
            // SAFETY: the caller's contract. In the launch stream, so the
            // kernel starts after the copy has landed (a plain cuMemcpyHtoD
            // from pageable memory may return before its DMA completes, and
            // our non-blocking stream would not wait for it).
            None => unsafe { sys::cuMemcpyHtoDAsync_v2(d, src as *const c_void, bytes, self.stream) }
                .result()
                .map_err(|e| launch_error(kernel, "cuMemcpyHtoDAsync", e)),
        }
    }

    /// Parameters: one slot per scalar the entry point takes (a mapped
    /// argument's device pointer, and its length where passed), and in
    /// `params` one pointer per parameter (a value's bytes, or a slot).
    /// `slots` is filled completely (and not resized) before any pointer
    /// into it is taken.
    fn fill_params(&mut self, args: &[ArgSpec<'_>]) {
        let slots = &mut self.slots;
        slots.clear();
        for (a, &d) in args.iter().zip(self.device_ptrs.iter()) {
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
        let params = &mut self.params;
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
    }

    /// Map back, after the kernel has finished: copies `&mut` arguments
    /// (and atomics) from their device memory to the host.
    fn map_back(&mut self, kernel: &KernelInfo, args: &[ArgSpec<'_>]) -> Result<()> {
        for (a, &d) in args.iter().zip(self.device_ptrs.iter()) {
            if let ArgKind::Host { ptr, bytes, writeback: true, atomic, .. } = a.kind {
                if bytes == 0 {
                    continue;
                }
                if atomic == 0 {
                    // SAFETY: `ptr` is valid for writes of `bytes` bytes (an
                    // exclusive borrow held by the launcher, plain data); `d`
                    // holds as many; the kernel has finished; the context is
                    // current.
                    if let Some(r) = unsafe { self.xfer.download(self.stream, ptr, d, bytes) } {
                        r.map_err(|(op, e)| launch_error(kernel, op, e))?;
                        continue;
                    }
                }
                // SAFETY: `ptr` is valid for writes of `bytes` bytes (an
                // exclusive borrow held by the launcher) or points to as
                // many bytes of atomics (`atomic` != 0); `d` holds as many.
                unsafe { recover::copy_back(ptr, d, bytes, atomic, &kernel.path())? };
            }
        }
        Ok(())
    }
}
