//! Device-only runtime support: what a `no_std` GPU crate needs besides `core`.

/// A panic in device code (explicit `panic!`, failed `assert!`, out-of-bounds
/// index, overflow with debug assertions) stops the kernel with a trap: the
/// launch fails and the host's launcher returns an `offload::Error` that
/// names the kernel and the driver's error.
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `trap` aborts the kernel (PTX ISA, "trap"); it has no preconditions.
    unsafe {
        core::arch::nvptx::trap()
    }
    #[cfg(target_arch = "amdgpu")]
    {
        // `llvm.trap`: `s_trap 2` on amdhsa, which aborts the dispatch.
        core::intrinsics::abort()
    }
}
