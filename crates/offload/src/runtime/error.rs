//! Errors of the host runtime.

use std::boxed::Box;
use std::fmt;
use std::string::String;
use std::vec::Vec;

/// `Result<T, offload::Error>`.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Everything a launch can report. Each variant names the operation, the
/// kernel where there is one, and the cause, and says what to do where
/// something can be done.
///
/// `Debug` prints the same text as `Display`, so `fn main() -> Result<(),
/// offload::Error>` ends with a readable one-line reason.
///
/// The error is at most 24 bytes: a variant with more than one string keeps
/// them in a box of its own type (the structs of [`offload::error`](crate::error),
/// named as the variants), so a `Result<T, offload::Error>` stays small on
/// the success path and clippy's `result_large_err` does not fire on user
/// functions that return one. Match a boxed variant and read its fields:
/// `Err(Error::KernelPanic(p)) => println!("{}", p.message)`.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed (`CUresult` other than `CUDA_SUCCESS`).
    #[error(transparent)]
    Driver(Box<Driver>),

    /// `OFFLOAD_DEVICE=cuda` was set but no GPU can be used.
    #[error("OFFLOAD_DEVICE=cuda but no usable CUDA GPU: {reason}; unset OFFLOAD_DEVICE (or set it to `host`) to run kernels on the CPU")]
    NoDevice {
        /// Why no GPU is usable, e.g. "libcuda.so was not found".
        reason: Box<str>,
    },

    /// `OFFLOAD_DEVICE` is not `cuda`, `cuda:N`, `host` or `host:N`.
    #[error("OFFLOAD_DEVICE={0:?} is not a device: use `cuda` (the first GPU), `cuda:N` (GPU N, the CUDA driver's ordinal), `host` (the CPU), `host:N` (host device N of OFFLOAD_HOST_DEVICES), or leave it unset to use the first GPU if one is usable")]
    InvalidDeviceSetting(Box<str>),

    /// `OFFLOAD_DEVICE` names a device this process does not have; see
    /// [`NoSuchDevice`].
    #[error(transparent)]
    NoSuchDevice(Box<NoSuchDevice>),

    /// Work on one device was given a [`DeviceBuffer`](crate::DeviceBuffer)
    /// of another, whose memory it may not use; see [`WrongDevice`]. Nothing
    /// was run or enqueued.
    #[error(transparent)]
    WrongDevice(Box<WrongDevice>),

    /// The binary carries no device image for the GPU (or none at all).
    #[error(transparent)]
    NoImage(Box<NoImage>),

    /// The embedded device image is malformed.
    #[error("the embedded device image is invalid: {0}")]
    BadImage(Box<str>),

    /// The kernel's symbol is not in the loaded device image.
    #[error(transparent)]
    KernelNotFound(Box<KernelNotFound>),

    /// A generic kernel was launched on a GPU with type arguments the device
    /// image has no code for; see [`InstanceNotBuilt`].
    #[error(transparent)]
    InstanceNotBuilt(Box<InstanceNotBuilt>),

    /// The launch configuration or the arguments are out of the limits
    /// CUDA imposes or the kernel declares; see [`InvalidLaunch`].
    #[error(transparent)]
    InvalidLaunch(Box<InvalidLaunch>),

    /// A device memory operation got arguments it cannot honor.
    #[error(transparent)]
    Memory(Box<Memory>),

    /// An asynchronous operation (a [`Queue`](crate::Queue), an
    /// [`Event`](crate::Event), a scope, a graph) was used where it cannot
    /// work; see [`Queue`].
    #[error(transparent)]
    Queue(Box<Queue>),

    /// A GPU thread of the kernel panicked, on the GPU or on the host
    /// fallback; see [`KernelPanic`]. Later launches work normally.
    #[error(transparent)]
    KernelPanic(Box<KernelPanic>),

    /// The host fallback found that a block can never finish; see
    /// [`Divergence`].
    #[error(transparent)]
    Divergence(Box<Divergence>),

    /// A GPU thread of the kernel ran out of stack; see [`StackOverflow`].
    #[error(transparent)]
    StackOverflow(Box<StackOverflow>),
}

fn peer_hint(device: &super::device::Device, buffer: &super::device::Device) -> String {
    if device.can_access_peer(*buffer) {
        std::format!("possible between these two: `Device::enable_peer_access` on {device} for {buffer}")
    } else {
        String::from("not possible between these two")
    }
}

/// [`Error::Driver`]: a CUDA driver call failed (`CUresult` other than
/// `CUDA_SUCCESS`).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{op} failed{}: {name} ({code}): {text}{}", kernel_suffix(kernel), log_suffix(log))]
pub struct Driver {
    /// The driver API function, e.g. `cuLaunchKernel`.
    pub op: &'static str,
    /// The kernel being launched, if any.
    pub kernel: Option<String>,
    /// The numeric `CUresult`.
    pub code: u32,
    /// The `CUresult` name, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub name: String,
    /// The driver's description (`cuGetErrorString`).
    pub text: String,
    /// The JIT compiler's log, for module loads.
    pub log: Option<String>,
}

/// [`Error::NoImage`]: the binary carries no device image for the GPU (or
/// none at all).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("no device image for {device}: {reason}")]
pub struct NoImage {
    /// The GPU, e.g. "NVIDIA H200 (sm_90)".
    pub device: String,
    /// What the binary carries and what to do.
    pub reason: String,
}

/// [`Error::KernelNotFound`]: the kernel's symbol is not in the loaded
/// device image.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("kernel `{kernel}` (symbol `{symbol}`) is not in the device image; the image has {}. Rebuild with `cargo offload` so that the image and the binary come from the same source", list(available))]
pub struct KernelNotFound {
    /// The kernel's Rust path.
    pub kernel: String,
    /// The symbol looked up.
    pub symbol: String,
    /// The kernel symbols the image does define.
    pub available: Vec<String>,
}

/// [`Error::InstanceNotBuilt`]: a generic kernel was launched on a GPU with
/// type arguments the device image has no code for: the binary was not
/// built by `cargo offload`, or the instantiation happens in a crate outside
/// the workspace, whose symbols `cargo offload` does not read.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("kernel `{kernel}` was launched with the type arguments `<{instance}>`, but the device image has no code for that instantiation. Build with `cargo offload`, which compiles every instantiation that the workspace's host code uses (one made inside a crate outside the workspace is not seen: launch the kernel from a workspace member)")]
pub struct InstanceNotBuilt {
    /// The generic kernel's Rust path.
    pub kernel: String,
    /// Its type arguments, as `core::any::type_name` spells them.
    pub instance: String,
}

/// [`Error::InvalidLaunch`]: the launch configuration is out of the limits
/// CUDA imposes (CUDA C++ Programming Guide, "Compute Capabilities", table
/// of technical specifications), or the arguments break what the kernel
/// declares (`same_len`, `shape`); checked identically on every backend.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("invalid launch of kernel `{kernel}`: {reason}")]
pub struct InvalidLaunch {
    /// The kernel's name.
    pub kernel: String,
    /// What is out of range.
    pub reason: String,
}

/// [`Error::Memory`]: a device memory operation got arguments it cannot
/// honor.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("cannot {op}: {reason}")]
pub struct Memory {
    /// The operation, e.g. "copy into a DeviceBuffer".
    pub op: &'static str,
    /// What is wrong.
    pub reason: String,
}

/// [`Error::Queue`]: an asynchronous operation was used where it cannot
/// work, e.g. `synchronize` inside [`Queue::capture`](crate::Queue::capture)
/// (CUDA forbids it during stream capture, `cudaErrorStreamCaptureUnsupported`).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("cannot {op}: {reason}")]
pub struct Queue {
    /// The operation, e.g. "synchronize a queue".
    pub op: &'static str,
    /// Why not, and what to do instead.
    pub reason: String,
}

/// [`Error::KernelPanic`]: a GPU thread of the kernel panicked (explicit
/// `panic!`, failed `assert!`, index out of bounds, overflow with debug
/// assertions), on the GPU or on the host fallback.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("kernel `{kernel}` panicked at {location} (block {block}, thread {thread}): {message}")]
pub struct KernelPanic {
    /// The kernel's name.
    pub kernel: String,
    /// The panic message; in optimized GPU builds a message with format
    /// arguments (`panic!("{x}")`, `assert!(c, "{x}")`, `assert_eq!`) is
    /// [`UNFORMATTED_PANIC_MESSAGE`](crate::UNFORMATTED_PANIC_MESSAGE)
    /// (`core`'s messages with values, such as an index out of bounds, are
    /// always formatted).
    pub message: String,
    /// `file:line:column` of the panic.
    pub location: String,
    /// `blockIdx` of the panicking thread, as `(x, y, z)`.
    pub block: String,
    /// `threadIdx` of the panicking thread, as `(x, y, z)`.
    pub thread: String,
}

/// [`Error::Divergence`]: the host fallback found that a block can never
/// finish: threads wait at `sync_threads` or a warp collective that other
/// threads of the block (or warp) never reach. On a GPU such a kernel hangs
/// or has undefined results (PTX ISA, `bar.sync` and `shfl.sync`: all
/// threads must execute the same instruction).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("kernel `{kernel}` cannot proceed in block {block}: {reason}")]
pub struct Divergence {
    /// The kernel's name.
    pub kernel: String,
    /// `blockIdx` of the block, as `(x, y, z)`.
    pub block: String,
    /// Who waits where.
    pub reason: String,
}

/// [`Error::StackOverflow`]: a GPU thread of the kernel ran out of stack
/// (recursion too deep): on the GPU, the check the device linker puts at the
/// entry of every recursive function stopped the thread before its next
/// call could overflow the per-thread stack (`CU_LIMIT_STACK_SIZE`); on the
/// host fallback, the thread hit the guard page of its stack. The thread is
/// stopped, the launch fails, and later launches work normally (on a GPU an
/// overflow would otherwise be an illegal address that leaves the CUDA
/// context unusable). Other threads' writes may have happened.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("kernel `{kernel}` overflowed the stack of a GPU thread (block {block}, thread {thread}): {detail}")]
pub struct StackOverflow {
    /// The kernel's name.
    pub kernel: String,
    /// `blockIdx` of the thread, as `(x, y, z)`.
    pub block: String,
    /// `threadIdx` of the thread, as `(x, y, z)`.
    pub thread: String,
    /// Which stack, how large, and what to do.
    pub detail: String,
}

/// [`Error::NoSuchDevice`]: `OFFLOAD_DEVICE` names a device this process
/// does not have, e.g. `cuda:1` on a machine with one GPU (the driver numbers
/// the GPUs it sees from 0; `CUDA_VISIBLE_DEVICES` hides and reorders them).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("OFFLOAD_DEVICE={requested} names no device of this process, whose devices are: {}; choose one of them, or leave OFFLOAD_DEVICE unset to use the first GPU if one is usable", super::device::list(available))]
pub struct NoSuchDevice {
    /// The setting, e.g. `cuda:1`.
    pub requested: String,
    /// The devices there are ([`devices`](crate::devices)).
    pub available: Vec<super::device::Device>,
}

/// [`Error::WrongDevice`]: work on one device was given a
/// [`DeviceBuffer`](crate::DeviceBuffer) of another, whose memory it may not
/// use: a kernel, or a copy, runs on its queue's (or its thread's) device and
/// reaches only that device's memory, unless
/// [`Device::enable_peer_access`](crate::Device::enable_peer_access) let it
/// use the other's (CUDA Driver API, "Peer Context Memory Access").
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{op} runs on {device}, but its argument `{argument}` is memory of {buffer_device}: work on a device uses only that device's DeviceBuffers, or a peer's once `enable_peer_access` allowed it ({}); copy the data with `Queue::memcpy_peer`, or run the work on {buffer_device}", peer_hint(device, buffer_device))]
pub struct WrongDevice {
    /// What ran: "kernel `app::saxpy`", or the copy, e.g.
    /// "`Queue::memcpy_dtod`".
    pub op: String,
    /// The kernel's parameter (or the copy's, `src` / `dst`) that got the
    /// buffer.
    pub argument: &'static str,
    /// The device the work runs on.
    pub device: super::device::Device,
    /// The device the buffer belongs to.
    pub buffer_device: super::device::Device,
}

/// `From<payload> for Error`, boxing: `Err(error::Queue { op, reason }.into())`.
macro_rules! boxed {
    ($($variant:ident),*) => {$(
        impl From<$variant> for Error {
            fn from(e: $variant) -> Error {
                Error::$variant(Box::new(e))
            }
        }
    )*};
}
boxed!(
    Driver,
    NoImage,
    KernelNotFound,
    InstanceNotBuilt,
    InvalidLaunch,
    Memory,
    Queue,
    KernelPanic,
    Divergence,
    StackOverflow,
    NoSuchDevice,
    WrongDevice
);

fn kernel_suffix(kernel: &Option<String>) -> String {
    match kernel {
        Some(k) => std::format!(" for kernel `{k}`"),
        None => String::new(),
    }
}

fn log_suffix(log: &Option<String>) -> String {
    match log {
        Some(l) if !l.trim().is_empty() => std::format!("\n{}", l.trim_end()),
        _ => String::new(),
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "no kernels".into()
    } else {
        let quoted: Vec<String> = names.iter().map(|n| std::format!("`{n}`")).collect();
        std::format!("{} kernel(s): {}", names.len(), quoted.join(", "))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;
    use std::vec;

    #[test]
    fn messages_name_cause_and_fix() {
        let e = Error::from(Driver {
            op: "cuLaunchKernel",
            kernel: Some("saxpy".into()),
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            text: "an illegal memory access was encountered".into(),
            log: None,
        });
        assert_eq!(
            e.to_string(),
            "cuLaunchKernel failed for kernel `saxpy`: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"
        );
        assert_eq!(std::format!("{e:?}"), e.to_string());
        let e = Error::from(KernelNotFound {
            kernel: "m::k".into(),
            symbol: "__offload_kernel_c_k_1".into(),
            available: vec!["__offload_kernel_c_j_2".into()],
        });
        assert!(e.to_string().contains("the image has 1 kernel(s): `__offload_kernel_c_j_2`"));
        let e = Error::InvalidDeviceSetting("gpu".into());
        assert_eq!(
            e.to_string(),
            "OFFLOAD_DEVICE=\"gpu\" is not a device: use `cuda` (the first GPU), `cuda:N` (GPU N, the CUDA driver's \
             ordinal), `host` (the CPU), `host:N` (host device N of OFFLOAD_HOST_DEVICES), or leave it unset to use the \
             first GPU if one is usable"
        );
    }

    #[test]
    fn the_error_is_at_most_three_words() {
        // A `Result<T, Error>` stays small on the success path, and clippy's
        // `result_large_err` (128 bytes) is far. A variant that would grow it
        // boxes its fields, as `Error::Queue` does.
        assert!(core::mem::size_of::<Error>() <= 24, "{} bytes", core::mem::size_of::<Error>());
        let e = Error::from(Queue { op: "synchronize a queue", reason: "it is capturing".into() });
        assert_eq!(e.to_string(), "cannot synchronize a queue: it is capturing");
        let Error::Queue(q) = &e else { panic!("{e}") };
        assert_eq!(q.op, "synchronize a queue");
    }
}
