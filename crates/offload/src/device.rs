//! Device-only runtime support: what a `no_std` GPU crate needs besides `core`.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::panic_record::{PanicRecord, DONE, EMPTY, FILE_BYTES, MESSAGE_BYTES, WRITING};

/// Where the host wants panic records: set by the CUDA backend after it
/// loads the module (see `panic_record`); null if the host did not (then a
/// panic only traps). The device linker keeps every `__offload_global_*`
/// symbol external so that the host can find it and the optimizer cannot
/// assume its value.
#[unsafe(no_mangle)]
pub static mut __offload_global_panic_slot: *mut PanicRecord = core::ptr::null_mut();

/// A panic in device code (explicit `panic!`, failed `assert!`, out-of-bounds
/// index, overflow with debug assertions): the first panicking thread of the
/// launch records message, location, block and thread for the host, then
/// the thread exits (PTX `exit`). The kernel finishes normally, so the CUDA
/// context stays healthy (a `trap` would leave it in a sticky error state,
/// which CUDA only clears by ending the process); the host finds the record
/// after the launch and the launcher returns `offload::Error::KernelPanic`.
/// Later launches work.
///
/// Messages: in builds with debug assertions (the dev profile) the message
/// is formatted on the GPU, arguments included. In optimized builds without
/// them it is kept when it is a literal (`panic!("…")`, `assert!(c, "…")`,
/// overflow checks) and otherwise replaced by a note: `core::fmt` calls
/// through function pointers, which makes ptxas reserve the maximum register
/// count (255) in every kernel that can panic, and that would cost release
/// kernels their occupancy. The location, block and thread are always kept,
/// and the host fallback (`OFFLOAD_DEVICE=host`) prints the full message.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        record(info);
        // SAFETY: `exit` ends this thread (PTX ISA, "exit"); the other
        // threads go on, and threads exited before a `bar.sync` do not keep it
        // waiting (exited threads count as arrived).
        unsafe { core::arch::asm!("exit;", options(noreturn, nostack)) }
    }
    #[cfg(target_arch = "amdgpu")]
    {
        let _ = info;
        // `llvm.trap`: `s_trap 2` on amdhsa, which aborts the dispatch.
        core::intrinsics::abort()
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn record(info: &core::panic::PanicInfo<'_>) {
    // SAFETY: the slot is written only by the host, before the launch.
    let rec = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(__offload_global_panic_slot)) };
    if rec.is_null() {
        return;
    }
    // SAFETY: the host made `rec` point to a live, mapped `PanicRecord`;
    // `state` is only accessed atomically, the other fields only by the
    // thread that won the compare-exchange below, before it publishes.
    unsafe {
        let state = AtomicU32::from_ptr(core::ptr::addr_of_mut!((*rec).state));
        if state.compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed).is_err() {
            // Another thread is recording: give it time to finish before this
            // thread exits (bounded, so a stuck writer cannot hang us).
            let mut spins = 0u32;
            while state.load(Ordering::Acquire) != DONE && spins < 1 << 22 {
                spins += 1;
            }
            return;
        }
        let t = crate::thread_idx();
        let b = crate::block_idx();
        (*rec).block = [b.x, b.y, b.z];
        (*rec).thread = [t.x, t.y, t.z];
        if let Some(loc) = info.location() {
            (*rec).line = loc.line();
            (*rec).column = loc.column();
            let f = loc.file().as_bytes();
            let n = f.len().min(FILE_BYTES);
            core::ptr::copy_nonoverlapping(f.as_ptr(), core::ptr::addr_of_mut!((*rec).file) as *mut u8, n);
            (*rec).file_len = n as u32;
        }
        let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
        let (len, cut) = match info.message().as_str() {
            Some(literal) => copy_message(buf, literal.as_bytes()),
            None if cfg!(debug_assertions) => {
                let mut w = RecordWriter { buf, len: 0, cut: false };
                let _ = core::fmt::write(&mut w, format_args!("{}", info.message()));
                (w.len, w.cut)
            }
            None => copy_message(buf, UNFORMATTED.as_bytes()),
        };
        (*rec).message_len = len as u32;
        (*rec).truncated = cut as u32;
        // Make the record visible to the host before publishing it.
        crate::atomic::fence(Ordering::SeqCst, crate::atomic::Scope::System);
        state.store(DONE, Ordering::Release);
        crate::atomic::fence(Ordering::SeqCst, crate::atomic::Scope::System);
    }
}

/// Copies `msg` into the record's message buffer; returns (length, cut).
///
/// # Safety
/// `buf` has `MESSAGE_BYTES` writable bytes.
#[cfg(target_arch = "nvptx64")]
unsafe fn copy_message(buf: *mut u8, msg: &[u8]) -> (usize, bool) {
    let n = msg.len().min(MESSAGE_BYTES);
    // SAFETY: `n <= MESSAGE_BYTES` (caller's contract for `buf`).
    unsafe { core::ptr::copy_nonoverlapping(msg.as_ptr(), buf, n) };
    (n, n < msg.len())
}

/// Writes the message straight into the record (no stack buffer).
#[cfg(target_arch = "nvptx64")]
struct RecordWriter {
    buf: *mut u8,
    len: usize,
    cut: bool,
}

#[cfg(target_arch = "nvptx64")]
impl core::fmt::Write for RecordWriter {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(MESSAGE_BYTES - self.len);
        // SAFETY: `buf` has `MESSAGE_BYTES` bytes and `len + n <= MESSAGE_BYTES`.
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), self.buf.add(self.len), n) };
        self.len += n;
        if n < s.len() {
            self.cut = true;
        }
        Ok(())
    }
}

/// What the record says for a message with arguments in an optimized build
/// (see [`panic`]).
#[cfg(target_arch = "nvptx64")]
pub(crate) const UNFORMATTED: &str = "(a message with arguments, not formatted on the GPU in optimized builds; a dev build or OFFLOAD_DEVICE=host prints it)";
