//! Errors of the host runtime.

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
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed (`CUresult` other than `CUDA_SUCCESS`).
    #[error("{op} failed{}: {name} ({code}): {text}{}", kernel_suffix(kernel), log_suffix(log))]
    Driver {
        /// The driver API function, e.g. `cuLaunchKernel`.
        op: &'static str,
        /// The kernel being launched, if any.
        kernel: Option<String>,
        /// The numeric `CUresult`.
        code: u32,
        /// The `CUresult` name, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
        name: String,
        /// The driver's description (`cuGetErrorString`).
        text: String,
        /// The JIT compiler's log, for module loads.
        log: Option<String>,
    },

    /// `OFFLOAD_DEVICE=cuda` was set but no GPU can be used.
    #[error("OFFLOAD_DEVICE=cuda but no usable CUDA GPU: {reason}; unset OFFLOAD_DEVICE (or set it to `host`) to run kernels on the CPU")]
    NoDevice {
        /// Why no GPU is usable, e.g. "libcuda.so was not found".
        reason: String,
    },

    /// `OFFLOAD_DEVICE` is not `cuda`, `cuda:N`, `host` or `host:N`.
    #[error("OFFLOAD_DEVICE={0:?} is not a device: use `cuda` (the first GPU), `cuda:N` (GPU N, the CUDA driver's ordinal), `host` (the CPU), or leave it unset to use the first GPU if one is usable")]
    InvalidDeviceSetting(String),

    /// `OFFLOAD_DEVICE` names a device this process does not have, e.g.
    /// `cuda:1` on a machine with one GPU (the driver numbers the GPUs it
    /// sees from 0; `CUDA_VISIBLE_DEVICES` hides and reorders them).
    #[error("OFFLOAD_DEVICE={requested} names no device of this process, whose devices are: {}; choose one of them, or leave OFFLOAD_DEVICE unset to use the first GPU if one is usable", super::device::list(available))]
    NoSuchDevice {
        /// The setting, e.g. `cuda:1`.
        requested: String,
        /// The devices there are ([`devices`](crate::devices)).
        available: Vec<super::device::Device>,
    },

    /// Work on one device was given a [`DeviceBuffer`](crate::DeviceBuffer)
    /// of another, whose memory it may not use: a kernel, or a copy, runs
    /// on its queue's (or its thread's) device and reaches only that
    /// device's memory, unless [`Device::enable_peer_access`](crate::Device::enable_peer_access)
    /// let it use the other's (CUDA Driver API, "Peer Context Memory
    /// Access"). Nothing was run or enqueued.
    #[error("{op} runs on {device}, but its argument `{argument}` is memory of {buffer_device}: work on a device uses only that device's DeviceBuffers, or a peer's once `enable_peer_access` allowed it ({}); copy the data with `Queue::memcpy_peer`, or run the work on {buffer_device}", peer_hint(device, buffer_device))]
    WrongDevice {
        /// What ran: "kernel `app::saxpy`", or the copy, e.g.
        /// "`Queue::memcpy_dtod`".
        op: String,
        /// The kernel's parameter (or the copy's, `src` / `dst`) that got
        /// the buffer.
        argument: &'static str,
        /// The device the work runs on.
        device: super::device::Device,
        /// The device the buffer belongs to.
        buffer_device: super::device::Device,
    },

    /// The binary carries no device image for the GPU (or none at all).
    #[error("no device image for {device}: {reason}")]
    NoImage {
        /// The GPU, e.g. "NVIDIA H200 (sm_90)".
        device: String,
        /// What the binary carries and what to do.
        reason: String,
    },

    /// The embedded device image is malformed.
    #[error("the embedded device image is invalid: {0}")]
    BadImage(String),

    /// The kernel's symbol is not in the loaded device image.
    #[error("kernel `{kernel}` (symbol `{symbol}`) is not in the device image; the image has {}. Rebuild with `cargo offload` so that the image and the binary come from the same source", list(available))]
    KernelNotFound {
        /// The kernel's Rust path.
        kernel: String,
        /// The symbol looked up.
        symbol: String,
        /// The kernel symbols the image does define.
        available: Vec<String>,
    },

    /// A generic kernel was launched on a GPU with type arguments the device
    /// image has no code for: the binary was not built by `cargo offload`,
    /// or the instantiation happens in a crate outside the workspace, whose
    /// symbols `cargo offload` does not read.
    #[error("kernel `{kernel}` was launched with the type arguments `<{instance}>`, but the device image has no code for that instantiation. Build with `cargo offload`, which compiles every instantiation that the workspace's host code uses (one made inside a crate outside the workspace is not seen: launch the kernel from a workspace member)")]
    InstanceNotBuilt {
        /// The generic kernel's Rust path.
        kernel: String,
        /// Its type arguments, as `core::any::type_name` spells them.
        instance: String,
    },

    /// The launch configuration is out of the limits CUDA imposes
    /// (CUDA C++ Programming Guide, "Compute Capabilities", table of
    /// technical specifications), checked identically on every backend.
    #[error("invalid launch of kernel `{kernel}`: {reason}")]
    InvalidLaunch {
        /// The kernel's name.
        kernel: String,
        /// What is out of range.
        reason: String,
    },

    /// A device memory operation got arguments it cannot honor.
    #[error("cannot {op}: {reason}")]
    Memory {
        /// The operation, e.g. "copy into a DeviceBuffer".
        op: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// An asynchronous operation (a [`Queue`](crate::Queue), an
    /// [`Event`](crate::Event), a scope, a graph) was used where it cannot
    /// work, e.g. `synchronize` inside [`Queue::capture`](crate::Queue::capture)
    /// (CUDA forbids it during stream capture, `cudaErrorStreamCaptureUnsupported`).
    #[error("cannot {op}: {reason}")]
    Queue {
        /// The operation, e.g. "synchronize a queue".
        op: &'static str,
        /// Why not, and what to do instead.
        reason: String,
    },

    /// A GPU thread of the kernel panicked (explicit `panic!`, failed
    /// `assert!`, index out of bounds, overflow with debug assertions), on
    /// the GPU or on the host fallback. Later launches work normally.
    #[error("kernel `{kernel}` panicked at {location} (block {block}, thread {thread}): {message}")]
    KernelPanic {
        /// The kernel's name.
        kernel: String,
        /// The panic message; in optimized GPU builds a message with
        /// arguments is [`UNFORMATTED_PANIC_MESSAGE`](crate::UNFORMATTED_PANIC_MESSAGE).
        message: String,
        /// `file:line:column` of the panic.
        location: String,
        /// `blockIdx` of the panicking thread, as `(x, y, z)`.
        block: String,
        /// `threadIdx` of the panicking thread, as `(x, y, z)`.
        thread: String,
    },

    /// The host fallback found that a block can never finish: threads wait
    /// at `sync_threads` or a warp collective that other threads of the
    /// block (or warp) never reach. On a GPU such a kernel hangs or has
    /// undefined results (PTX ISA, `bar.sync` and `shfl.sync`: all threads
    /// must execute the same instruction).
    #[error("kernel `{kernel}` cannot proceed in block {block}: {reason}")]
    Divergence {
        /// The kernel's name.
        kernel: String,
        /// `blockIdx` of the block, as `(x, y, z)`.
        block: String,
        /// Who waits where.
        reason: String,
    },

    /// A GPU thread of the kernel ran out of stack (recursion too deep): on
    /// the GPU, the check the device linker puts at the entry of every
    /// recursive function stopped the thread before its next call could
    /// overflow the per-thread stack (`CU_LIMIT_STACK_SIZE`); on the host
    /// fallback, the thread hit the guard page of its stack. The thread is
    /// stopped, the launch fails, and later launches work normally (on a GPU
    /// an overflow would otherwise be an illegal address that leaves the
    /// CUDA context unusable). Other threads' writes may have happened.
    #[error("kernel `{kernel}` overflowed the stack of a GPU thread (block {block}, thread {thread}): {detail}")]
    StackOverflow {
        /// The kernel's name.
        kernel: String,
        /// `blockIdx` of the thread, as `(x, y, z)`.
        block: String,
        /// `threadIdx` of the thread, as `(x, y, z)`.
        thread: String,
        /// Which stack, how large, and what to do.
        detail: String,
    },
}

fn peer_hint(device: &super::device::Device, buffer: &super::device::Device) -> String {
    if device.can_access_peer(*buffer) {
        std::format!("possible between these two: `Device::enable_peer_access` on {device} for {buffer}")
    } else {
        String::from("not possible between these two")
    }
}

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
        let e = Error::Driver {
            op: "cuLaunchKernel",
            kernel: Some("saxpy".into()),
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            text: "an illegal memory access was encountered".into(),
            log: None,
        };
        assert_eq!(
            e.to_string(),
            "cuLaunchKernel failed for kernel `saxpy`: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"
        );
        assert_eq!(std::format!("{e:?}"), e.to_string());
        let e = Error::KernelNotFound {
            kernel: "m::k".into(),
            symbol: "__offload_kernel_c_k_1".into(),
            available: vec!["__offload_kernel_c_j_2".into()],
        };
        assert!(e.to_string().contains("the image has 1 kernel(s): `__offload_kernel_c_j_2`"));
        let e = Error::InvalidDeviceSetting("gpu".into());
        assert_eq!(
            e.to_string(),
            "OFFLOAD_DEVICE=\"gpu\" is not a device: use `cuda` (the first GPU), `cuda:N` (GPU N, the CUDA driver's \
             ordinal), `host` (the CPU), or leave it unset to use the first GPU if one is usable"
        );
    }
}
