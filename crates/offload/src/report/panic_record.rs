//! The record a panicking GPU thread leaves for the host: the layout both
//! sides agree on (`#[repr(C)]`, same on nvptx64 and the host).
//!
//! The host allocates one record in page-locked host memory mapped into the
//! device's address space (`cuMemHostAlloc(DEVICEMAP)`), and stores its
//! device address in the image's global [`SLOT_SYMBOL`] after loading the
//! module. The device's panic handler claims the record through the
//! image's global [`CLAIM_SYMBOL`] in device memory (a GPU-scope
//! compare-exchange [`EMPTY`] → [`WRITING`]: no atomic touches the host
//! memory), writes the record with plain stores, publishes it (claim
//! [`DONE`], then `state` = [`DONE`] with a volatile store, between
//! system-scope fences) and the thread exits. The host reads it after the
//! launch, zeroes it and resets the claim to [`EMPTY`] (`cuMemsetD32Async`).
//! Strings that are constants of the image (the file name, a literal
//! message) are recorded by address and copied out by the host, so that the
//! recorder has no copy loops: every kernel that can panic pays for the
//! recorder's registers.

/// Bytes of the file name kept.
pub(crate) const FILE_BYTES: usize = 192;
/// Bytes of the panic message kept.
pub(crate) const MESSAGE_BYTES: usize = 512;

/// The device global holding the record's address (a `*mut PanicRecord`).
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) const SLOT_SYMBOL: &str = "__offload_global_panic_slot";

/// The device global that decides which thread writes the record (a
/// `u32` in device memory holding [`EMPTY`], [`WRITING`] or [`DONE`]; see
/// `gpu::__offload_global_panic_claim`), reset by the host after it takes
/// a record.
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub(crate) const CLAIM_SYMBOL: &str = "__offload_global_panic_claim";

/// State: empty.
#[cfg_attr(target_arch = "amdgpu", allow(dead_code))]
pub(crate) const EMPTY: u32 = 0;
/// State: a thread is writing the record.
#[cfg_attr(not(any(target_arch = "nvptx64", target_arch = "amdgpu")), allow(dead_code))]
pub(crate) const WRITING: u32 = 1;
/// State: complete.
pub(crate) const DONE: u32 = 2;

/// The message a GPU panic arrives with, in
/// [`Error::KernelPanic`](crate::Error)'s `message`, when the panic's
/// message has arguments (`panic!("bad index {i}")`, an index out of
/// bounds, `assert!(c, "{x}")`) and the device code was built without debug
/// assertions (an optimized profile such as `--release`): the GPU does not
/// format it there, because `core::fmt`'s calls through function pointers
/// would make ptxas reserve 255 registers in every kernel that can panic
/// (see `docs/device-model.md`, "Panics"). Literal messages, the location,
/// the block and the thread are always reported; builds with debug
/// assertions and the host fallback format the message. Compare with it to
/// tell this known limitation from a message.
pub const UNFORMATTED_PANIC_MESSAGE: &str =
    "(a message with arguments, not formatted on the GPU in optimized builds; a dev build or OFFLOAD_DEVICE=host prints it)";

/// The message of a record that reports a stack overflow instead of a
/// panic: the recursion check the device linker inserts (see
/// `gpu::__offload_stack_guard`) records it, with the recursive
/// function's name in place of the file name and line and column 0.
pub(crate) const STACK_OVERFLOW: &str = "offload: stack overflow in a recursive function";

#[repr(C)]
pub(crate) struct PanicRecord {
    pub state: u32,
    pub line: u32,
    pub column: u32,
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub file_len: u32,
    pub message_len: u32,
    /// 1 if the message was cut to `MESSAGE_BYTES`.
    pub truncated: u32,
    /// Device address of the file name (a string constant of the image),
    /// which the host copies out after the launch; 0: the name is in `file`.
    pub file_addr: u64,
    /// Device address of a literal message; 0: the message is in `message`.
    pub message_addr: u64,
    pub file: [u8; FILE_BYTES],
    pub message: [u8; MESSAGE_BYTES],
}
