//! The backend interface: what the generic front of a launch (`launch`),
//! the memory types (`buffer`, `pinned`) and device globals need from a
//! backend, implemented by the CUDA backend (`cuda`) and the host fallback
//! (`host`). What describes a backend to the user is `info`'s.

use super::error::Result;
use super::info::BackendInfo;
use super::kernel::KernelInfo;
use super::spec::ArgSpec;
use crate::device::config::LaunchConfig;

/// The backend interface: the generic front in `launch.rs` validates and
/// traces; a backend maps arguments and runs the kernel.
pub(crate) trait Backend: Send + Sync {
    fn info(&self) -> &BackendInfo;
    /// Changes when a GPU's context is rebuilt after a sticky fault: memory
    /// and handles of an older generation are gone (never freed again).
    fn generation(&self) -> u64 {
        0
    }
    fn launch_impl(
        &self,
        kernel: &'static KernelInfo,
        cfg: &LaunchConfig,
        args: &[ArgSpec<'_>],
        host: &(dyn Fn() + Sync),
    ) -> Result<()>;

    /// `bytes` of zeroed memory of this backend; returns its address.
    fn alloc_zeroed(&self, bytes: usize) -> Result<u64>;

    /// Frees memory from [`alloc_zeroed`](Backend::alloc_zeroed) made in
    /// context generation `generation` ([`generation`](Backend::generation)
    /// then); memory of an older generation went with its context and is
    /// not freed again.
    ///
    /// # Safety
    /// `addr` came from `alloc_zeroed(bytes)` of this backend, is freed once,
    /// and no work uses it: queued work that used it has finished.
    unsafe fn free(&self, addr: u64, bytes: usize, generation: u64);

    /// `bytes` of zeroed page-locked ("pinned") host memory, which the GPU's
    /// copy engines reach directly: host ↔ device copies from and to it run
    /// at the interconnect's full speed, with no staging copy. The host
    /// fallback allocates ordinary memory.
    fn alloc_pinned(&self, bytes: usize) -> Result<*mut u8>;

    /// Frees memory from [`alloc_pinned`](Backend::alloc_pinned).
    ///
    /// # Safety
    /// `ptr` came from `alloc_pinned(bytes)` of this backend, is freed once,
    /// and is not in use.
    unsafe fn free_pinned(&self, ptr: *mut u8, bytes: usize);

    /// Copies `bytes` from host memory at `src` to this backend's memory.
    ///
    /// # Safety
    /// `dst` is this backend's memory with room for `bytes`; `src` is valid
    /// for reads of `bytes`.
    unsafe fn copy_to_device(&self, dst: u64, src: *const u8, bytes: usize) -> Result<()>;

    /// Copies `bytes` from this backend's memory to host memory at `dst`.
    ///
    /// # Safety
    /// `src` is this backend's memory holding `bytes`; `dst` is valid for
    /// writes of `bytes`.
    unsafe fn copy_from_device(&self, dst: *mut u8, src: u64, bytes: usize) -> Result<()>;

    /// The address, for [`copy_to_device`](Backend::copy_to_device) and
    /// [`copy_from_device`](Backend::copy_from_device), of the device
    /// image's global `symbol` of `bytes` bytes (CUDA `cuModuleGetGlobal`);
    /// `host` is the host fallback's storage for it.
    fn global(&self, symbol: &str, bytes: usize, host: *mut u8) -> Result<u64>;
}
