//! The record a panicking GPU thread leaves for the host: the layout both
//! sides agree on (`#[repr(C)]`, same on nvptx64 and the host).
//!
//! The host allocates one record in page-locked host memory mapped into the
//! device's address space (`cuMemHostAlloc(DEVICEMAP)`), and stores its
//! device address in the image's global [`SLOT_SYMBOL`] after loading the
//! module. The device's panic handler claims the record (compare-exchange
//! of `state` 0 → 1), writes it, publishes it (`state` = 2, after a
//! system-scope fence) and the thread exits. The host reads it after the
//! launch. Strings that are constants of the image (the file name, a literal
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

/// State: empty.
#[cfg_attr(not(any(target_arch = "nvptx64", target_arch = "amdgpu")), allow(dead_code))]
pub(crate) const EMPTY: u32 = 0;
/// State: a thread is writing the record.
#[cfg_attr(not(any(target_arch = "nvptx64", target_arch = "amdgpu")), allow(dead_code))]
pub(crate) const WRITING: u32 = 1;
/// State: complete.
pub(crate) const DONE: u32 = 2;

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
