//! Device-only runtime support: what a `no_std` GPU crate needs besides `core`.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::report::panic_record::{PanicRecord, DONE, EMPTY, MESSAGE_BYTES, WRITING};
#[cfg(target_arch = "nvptx64")]
use crate::report::panic_record::STACK_OVERFLOW;

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
        // Only scalars and string constants cross into the (out-of-line)
        // recorder: once the device link inlines core's panic helpers and this
        // handler (see offload-linker's `panics`), the message's formatting
        // arguments are dead in optimized builds and cost no registers.
        // The location goes by reference (one address to set up at each
        // panic site, instead of file, length, line and column: ptxas hoists
        // such constants into a kernel's entry block, where every thread
        // executes them, panicking or not).
        let location = info.location();
        match info.message().as_str() {
            Some(literal) => record(location, Message::Literal(literal)),
            #[cfg(debug_assertions)]
            None => record(location, Message::Format(info)),
            #[cfg(not(debug_assertions))]
            None => record(location, Message::Literal(UNFORMATTED)),
        }
        // SAFETY: `exit` ends this thread (PTX ISA, "exit"); the other
        // threads go on, and threads exited before a `bar.sync` do not keep it
        // waiting (exited threads count as arrived).
        unsafe { core::arch::asm!("exit;", options(noreturn, nostack)) }
    }
    #[cfg(target_arch = "amdgpu")]
    {
        let _ = info;
        extern "C" {
            // Called, not named as a value (see tests/intrinsics.rs). Not
            // `core::intrinsics::abort`: rustc 1.101 renamed it.
            #[link_name = "llvm.trap"]
            fn trap() -> !;
        }
        // SAFETY: `llvm.trap` is `s_trap 2` on amdhsa, which aborts the
        // dispatch; it has no preconditions.
        unsafe { trap() }
    }
}

/// A warp collective that part of a warp reached while the rest had
/// exited (see [`warp`](crate::warp)'s module docs): records
/// [`Error::Divergence`](crate::Error)'s text for the host (the first
/// record of the launch wins, as for panics) and ends the thread with PTX
/// `exit`. `waiting`: the lanes at the collective; `returned`: the lanes of
/// the warp that have exited. Out of line and cold: a kernel pays only the
/// ballot and the branch to it.
#[cfg(target_arch = "nvptx64")]
#[cold]
#[inline(never)]
pub(crate) fn warp_divergence(op: &'static str, warp: u32, waiting: u32, returned: u32) -> ! {
    record(None, Message::Warp { op, warp, waiting, returned });
    // SAFETY: as in `panic`: `exit` ends this thread only.
    unsafe { core::arch::asm!("exit;", options(noreturn, nostack)) }
}

/// A panic's message as the recorder gets it.
#[cfg(target_arch = "nvptx64")]
enum Message<'a> {
    /// A string constant of the image, recorded by address.
    Literal(&'static str),
    /// A warp collective in divergent code: the message is
    /// [`divergence::PREFIX`](crate::report::divergence::PREFIX) and the reason,
    /// written into the record.
    Warp { op: &'static str, warp: u32, waiting: u32, returned: u32 },
    /// Formatted into the record (builds with debug assertions only).
    #[cfg(debug_assertions)]
    Format(&'a core::panic::PanicInfo<'a>),
    #[cfg(not(debug_assertions))]
    #[allow(dead_code)]
    Never(core::marker::PhantomData<&'a ()>, core::convert::Infallible),
}

/// Claims the launch's panic record and writes it: the location and a
/// literal message by address, or the message formatted into the record.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn record(location: Option<&core::panic::Location<'_>>, message: Message<'_>) {
    let (file, line, column) = match location {
        Some(l) => (l.file(), l.line(), l.column()),
        None => ("<unknown>", 0, 0),
    };
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
        // Strings that are constants of the image go by address; the host
        // copies them out (no copy loops here: see `panic_record`).
        (*rec).line = line;
        (*rec).column = column;
        (*rec).file_addr = file.as_ptr() as u64;
        (*rec).file_len = file.len() as u32;
        match message {
            Message::Literal(m) => {
                (*rec).message_addr = m.as_ptr() as u64;
                (*rec).message_len = m.len() as u32;
            }
            Message::Warp { op, warp, waiting, returned } => {
                // The record's `MESSAGE_BYTES`-byte message buffer, which
                // this thread alone writes (it won the compare-exchange).
                let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
                let mut w = crate::report::divergence::Bytes {
                    buf: core::slice::from_raw_parts_mut(buf, MESSAGE_BYTES),
                    len: 0,
                };
                w.str(crate::report::divergence::PREFIX);
                crate::report::divergence::write_reason(&mut w, op, warp, waiting, returned, 0);
                (*rec).message_addr = 0;
                (*rec).message_len = w.len as u32;
                (*rec).truncated = 0;
            }
            #[cfg(not(debug_assertions))]
            Message::Never(_, never) => match never {},
            #[cfg(debug_assertions)]
            Message::Format(info) => {
                let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
                let mut w = RecordWriter { buf, len: 0, cut: false };
                let _ = core::fmt::write(&mut w, format_args!("{}", info.message()));
                (*rec).message_addr = 0;
                (*rec).message_len = w.len as u32;
                (*rec).truncated = w.cut as u32;
            }
        }
        // Make the record visible to the host before publishing it.
        crate::device::atomic::fence(Ordering::SeqCst, crate::device::atomic::Scope::System);
        state.store(DONE, Ordering::Release);
        crate::device::atomic::fence(Ordering::SeqCst, crate::device::atomic::Scope::System);
    }
}

/// The lowest local address of a GPU thread's stack, measured by the host:
/// the CUDA backend launches the device link's stack probe (offload-linker,
/// `recursion`) after loading a module that has recursion checks and stores
/// `T' - CU_LIMIT_STACK_SIZE` + a slack here, `T'` being the local address
/// the probe found at the top of its frame (`runtime/cuda/recover.rs`,
/// `install_stack_floor`). 0 until the host sets it: then
/// [`__offload_stack_guard`] compares with `reserve` alone, which only
/// catches overflows on a GPU whose stack grows down to local address 0
/// (on an H200 the stack starts near 16 MiB: unprotected).
///
/// Not an `__offload_global_*` symbol: the device link keeps it (external,
/// so the optimizer cannot assume its value) only in modules it puts
/// recursion checks into, and drops it from every other module, whose PTX
/// stays as it was.
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub static mut __offload_stack_floor: u64 = 0;

/// The recursion check: the device linker (`offload-linker`, `recursion`)
/// calls this at the entry of every function in a cycle of the call graph
/// (direct recursion, or functions calling each other), and inlines it.
/// Everything else is unchanged: kernels without recursion never see it.
///
/// A GPU thread's stack is local memory: the CUDA ABI's stack pointer
/// starts at a local address `T` the driver chooses and the stack grows
/// down from it to the floor, `T - CU_LIMIT_STACK_SIZE`, which the host
/// measured and stored in [`__offload_stack_floor`]. Going below the floor
/// is an out-of-range local access that leaves the CUDA context unusable.
/// `cvta.to.local` of a local variable of the current frame gives its
/// local address (PTX ISA, "cvta"; local state space). If that is less
/// than `floor + reserve` (`reserve`: the linker's bound, in bytes, on what
/// one more level of the recursion and the calls it makes may need), the
/// thread records a stack overflow through the panic record, naming the
/// function (`function`, `len` bytes: a string constant of the image), and
/// exits, as a panicking thread does: the kernel finishes, the context
/// stays healthy, and the host reports `offload::Error::StackOverflow`.
///
/// (Exported so that the device link finds it by name; the linker marks it
/// `alwaysinline` where it inserts the calls, since rustc ignores
/// `#[inline]` on exported functions.)
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub extern "C" fn __offload_stack_guard(reserve: u64, function: *const u8, len: usize) {
    let probe = 0u8;
    let sp: u64;
    // SAFETY: converts the generic address of a local of this frame to its
    // local-state-space address; reads and writes no memory.
    unsafe {
        core::arch::asm!(
            "cvta.to.local.u64 {l}, {g};",
            l = out(reg64) sp,
            g = in(reg64) core::ptr::addr_of!(probe) as u64,
            options(pure, nomem, nostack)
        )
    };
    // SAFETY: an aligned `u64` that the host writes only while no kernel of
    // the context runs; device code only reads it.
    let floor = unsafe { core::ptr::addr_of!(__offload_stack_floor).read() };
    // The floor is below 2^24 (the local window) and `reserve` a few KiB:
    // no wrap-around.
    if sp < floor.wrapping_add(reserve) {
        stack_overflow(function, len);
    }
}

/// Records a stack overflow in `function` and ends the thread (see
/// [`__offload_stack_guard`]).
#[cfg(target_arch = "nvptx64")]
#[cold]
#[inline(never)]
fn stack_overflow(function: *const u8, len: usize) -> ! {
    // SAFETY: the linker passes a string constant of the image and its
    // length; names of Rust functions are UTF-8.
    let name = unsafe { core::str::from_utf8_unchecked(core::slice::from_raw_parts(function, len)) };
    record_named(name, STACK_OVERFLOW);
    // SAFETY: as in `panic`: ends this thread only.
    unsafe { core::arch::asm!("exit;", options(noreturn, nostack)) }
}

/// Claims the launch's record and writes `message` with `name` in place of
/// the file name (line and column 0): how a stack overflow is reported.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn record_named(name: &'static str, message: &'static str) {
    // SAFETY: the slot is written only by the host, before the launch.
    let rec = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(__offload_global_panic_slot)) };
    if rec.is_null() {
        return;
    }
    // SAFETY: as in `record` (the same protocol, without a message to format).
    unsafe {
        let state = AtomicU32::from_ptr(core::ptr::addr_of_mut!((*rec).state));
        if state.compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed).is_err() {
            // Another thread is recording: give it time to finish (bounded).
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
        (*rec).line = 0;
        (*rec).column = 0;
        (*rec).file_addr = name.as_ptr() as u64;
        (*rec).file_len = name.len() as u32;
        (*rec).message_addr = message.as_ptr() as u64;
        (*rec).message_len = message.len() as u32;
        crate::device::atomic::fence(Ordering::SeqCst, crate::device::atomic::Scope::System);
        state.store(DONE, Ordering::Release);
        crate::device::atomic::fence(Ordering::SeqCst, crate::device::atomic::Scope::System);
    }
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
