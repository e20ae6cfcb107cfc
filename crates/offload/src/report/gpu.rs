//! Device-only runtime support: what a `no_std` GPU crate needs besides `core`.

use core::sync::atomic::{AtomicU32, Ordering};

#[cfg(target_arch = "nvptx64")]
use crate::report::panic_record::STACK_OVERFLOW;
use crate::report::panic_record::{PanicRecord, DONE, EMPTY, MESSAGE_BYTES, WRITING};

/// Where the host wants panic records: set by the CUDA backend after it
/// loads the module (see `panic_record`); null if the host did not (then a
/// panic only traps). The device linker keeps every `__offload_global_*`
/// symbol external so that the host can find it and the optimizer cannot
/// assume its value.
#[unsafe(no_mangle)]
pub static mut __offload_global_panic_slot: *mut PanicRecord = core::ptr::null_mut();

/// Who writes the panic record: [`EMPTY`], [`WRITING`] while the first
/// failing thread writes it, [`DONE`] once that thread has published it. A
/// word of *device* memory (this module's global), claimed with a
/// compare-exchange at GPU scope, because the record is mapped host memory,
/// which the GPU cannot update atomically where the link to the host has no
/// native atomics (`CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED` = 0:
/// x86 hosts over PCIe; the CUDA C++ Programming Guide, "Mapped Memory":
/// atomics on mapped page-locked memory are not atomic for the host, and
/// compute-sanitizer rejects them); the record itself is written with plain
/// stores only (see [`publish`]).
///
/// [`EMPTY`] when the module is loaded; the host sets it back to [`EMPTY`]
/// each time it has taken a record (`runtime/cuda/recover.rs`,
/// `PanicSlot::take`): a panic, a stack overflow and a warp divergence all
/// end the thread with `exit`, not `trap`, so the module outlives them (a
/// fault that does end the context reloads the module, which resets this).
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub static __offload_global_panic_claim: AtomicU32 = AtomicU32::new(EMPTY);

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
/// overflow checks) and otherwise replaced by a note
/// ([`UNFORMATTED_PANIC_MESSAGE`](crate::UNFORMATTED_PANIC_MESSAGE)):
/// `core::fmt` calls through function pointers, which makes ptxas reserve
/// the maximum register count (255) in every kernel that can panic, and
/// that would cost release kernels their occupancy. The location, block and
/// thread are always kept, and the host fallback (`OFFLOAD_DEVICE=host`)
/// prints the full message. Two kinds of panics with values never get here
/// on the GPU, and read as on the host in every profile: `core`'s panics
/// with numbers (index out of bounds, slice ranges, `copy_from_slice`) and
/// `Option::expect`, which the device link sends to
/// [`core_panics`](crate::report::core_panics); and `panic!`, `assert!`,
/// `assert_eq!`, `assert_ne!` and `unreachable!` with format arguments
/// written in a kernel body, which the kernel macro sends to
/// [`arg_panics`](crate::report::arg_panics) in optimized builds (see
/// [`panic_args`](crate::report::panic_args): up to eight values that are
/// integers, floats, `bool`, `char` or `&str`; `{?}` for the others). Both record
/// values for the host to format, never calling `core::fmt`. The note is
/// left for messages with arguments outside kernel bodies (in functions a
/// kernel calls, `Result::unwrap`'s error).
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
        // executes them, panicking or not), the message as its address and
        // length (no aggregate in memory: a stack slot's address would be
        // hoisted there too).
        // The recorders end the thread themselves: ptxas makes a kernel
        // keep its live registers across a call that returns, which cost
        // miniBUDE's `fasten` kernel 40 registers (80 instead of 40), but
        // not across a call to a `.noreturn` function.
        let location = info.location();
        match info.message().as_str() {
            Some(literal) => record_literal(location, literal),
            #[cfg(debug_assertions)]
            None => record_formatted(location, info),
            #[cfg(not(debug_assertions))]
            None => record_literal(location, crate::UNFORMATTED_PANIC_MESSAGE),
        }
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

/// Ends this GPU thread after it has recorded its failure: PTX `exit`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn exit_thread() -> ! {
    // SAFETY: `exit` ends this thread (PTX ISA, "exit"); the other threads
    // go on, and threads exited before a `bar.sync` do not keep it waiting
    // (exited threads count as arrived).
    unsafe { core::arch::asm!("exit;", options(noreturn, nostack)) }
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
    if let Some(rec) = begin(None) {
        // SAFETY: `rec` is the live, mapped record, which this thread
        // claimed (`begin`): it alone writes the record until it publishes it.
        unsafe {
            // The record's `MESSAGE_BYTES`-byte message buffer.
            let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
            let mut w =
                crate::report::divergence::Bytes { buf: core::slice::from_raw_parts_mut(buf, MESSAGE_BYTES), len: 0 };
            w.str(crate::report::divergence::PREFIX);
            crate::report::divergence::write_reason(&mut w, op, warp, waiting, returned, 0);
            (*rec).message_len = w.len as u32;
            publish(rec);
        }
    }
    exit_thread()
}

/// Records a panic whose message is `message`, a string constant of the
/// image (recorded by address; the host copies it out), and ends the thread.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn record_literal(location: Option<&core::panic::Location<'_>>, message: &'static str) -> ! {
    if let Some(rec) = begin(location) {
        // SAFETY: as in `warp_divergence`: this thread's claimed record.
        unsafe {
            (*rec).message_addr = message.as_ptr() as u64;
            (*rec).message_len = message.len() as u32;
            publish(rec);
        }
    }
    exit_thread()
}

/// Records a panic whose message is formatted into the record (builds with
/// debug assertions only: see [`panic`]), and ends the thread.
#[cfg(all(target_arch = "nvptx64", debug_assertions))]
#[inline(never)]
fn record_formatted(location: Option<&core::panic::Location<'_>>, info: &core::panic::PanicInfo<'_>) -> ! {
    if let Some(rec) = begin(location) {
        // SAFETY: as in `warp_divergence`: this thread's claimed record,
        // whose `MESSAGE_BYTES`-byte message buffer `RecordWriter` fills.
        unsafe {
            let buf = core::ptr::addr_of_mut!((*rec).message) as *mut u8;
            let mut w = RecordWriter { buf, len: 0, cut: false };
            let _ = core::fmt::write(&mut w, format_args!("{}", info.message()));
            (*rec).message_len = w.len as u32;
            (*rec).truncated = w.cut as u32;
            publish(rec);
        }
    }
    exit_thread()
}

/// Claims the launch's panic record ([`claim`]) and writes where and who
/// failed: block, thread, and `location` (the file name by address: a
/// string constant of the image, which the host copies out; no copy loops
/// here, see `panic_record`). The caller writes the message and publishes
/// the record ([`publish`]). The record's other fields are zero (the host
/// zeroes it before the first launch and after taking each record).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn begin(location: Option<&core::panic::Location<'_>>) -> Option<*mut PanicRecord> {
    let (file, line, column) = match location {
        Some(l) => (l.file(), l.line(), l.column()),
        None => ("<unknown>", 0, 0),
    };
    let rec = claim()?;
    // SAFETY: `rec` is the record this thread claimed.
    unsafe { write_place(rec, file, line, column) };
    Some(rec)
}

/// Writes block, thread and the location (`file`, `line`, `column`) into
/// the record (see [`begin`]).
///
/// # Safety
/// `rec` is the live record, claimed by this thread ([`claim`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn write_place(rec: *mut PanicRecord, file: &str, line: u32, column: u32) {
    // SAFETY: the caller's contract: this thread alone writes the fields
    // until it publishes them (plain stores to the mapped record).
    unsafe {
        write_ids(rec);
        (*rec).line = line;
        (*rec).column = column;
        (*rec).file_addr = file.as_ptr() as u64;
        (*rec).file_len = file.len() as u32;
    }
}

/// Writes this thread's block and thread index into the record.
///
/// # Safety
/// `rec` is the live record, claimed by this thread ([`claim`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn write_ids(rec: *mut PanicRecord) {
    // SAFETY: as in `write_place`.
    unsafe {
        let t = crate::thread_idx();
        let b = crate::block_idx();
        (*rec).block = [b.x, b.y, b.z];
        (*rec).thread = [t.x, t.y, t.z];
    }
}

/// The record to write if this thread claims the context's panic record
/// (`None`: the host set no record, or another thread's record was
/// published first). One thread wins the claim ([`__offload_global_panic_claim`],
/// `EMPTY` → `WRITING`); the others wait until the winner has published
/// before they exit, so that a launch that ends has its record visible to
/// the host, and give up after 2^22 rounds (a stuck writer cannot hang
/// them). Should the host take the record meanwhile (the claim is `EMPTY`
/// again: a queue's check while this kernel still runs), a waiting thread
/// claims the fresh record for its own failure.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn claim() -> Option<*mut PanicRecord> {
    use crate::device::atomic::{Scope, ScopedAtomicInt};
    // SAFETY: the slot is written only by the host, before the launch.
    let rec = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(__offload_global_panic_slot)) };
    if rec.is_null() {
        return None;
    }
    let claim = &__offload_global_panic_claim;
    let mut spins = 0u32;
    loop {
        match claim.load(Ordering::Relaxed) {
            EMPTY if claim.compare_exchange_scoped(EMPTY, WRITING, Ordering::Acquire, Scope::Device).is_ok() => {
                return Some(rec)
            }
            // SAFETY: `rec` is the live record; `state` is read with a
            // volatile load (host memory: no atomic), written only by
            // `publish` and by the host.
            DONE if unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*rec).state)) } == DONE => return None,
            _ if spins >= 1 << 22 => return None,
            _ => spins += 1,
        }
    }
}

/// Publishes the record that this thread claimed and wrote: a system-scope
/// fence, so that the host sees the record's fields (plain stores to host
/// memory) before anything after it; the claim `DONE`; another fence; then
/// the record's `state` `DONE` with a volatile store (no read-modify-write
/// on host memory). The claim goes first so that once the host sees the
/// record published the claim is `DONE` already, and the host's reset to
/// `EMPTY` after taking the record cannot be overtaken by it.
///
/// # Safety
/// `rec` is the live record, claimed by this thread ([`claim`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn publish(rec: *mut PanicRecord) {
    use crate::device::atomic::{fence, Scope};
    fence(Ordering::SeqCst, Scope::System);
    __offload_global_panic_claim.store(DONE, Ordering::Relaxed);
    fence(Ordering::SeqCst, Scope::System);
    // SAFETY: the caller's contract; this thread alone writes the record.
    unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!((*rec).state), DONE) };
    fence(Ordering::SeqCst, Scope::System);
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
    record_named(name, STACK_OVERFLOW)
}

/// Claims the launch's record and writes `message` with `name` in place of
/// the file name (line and column 0): how a stack overflow is reported;
/// then ends the thread.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
fn record_named(name: &'static str, message: &'static str) -> ! {
    let Some(rec) = claim() else { exit_thread() };
    // SAFETY: as in `begin` (the same protocol, with `name` for the location).
    unsafe {
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
        publish(rec);
    }
    exit_thread()
}

/// Writes the message straight into the record (no stack buffer).
#[cfg(all(target_arch = "nvptx64", debug_assertions))]
struct RecordWriter {
    buf: *mut u8,
    len: usize,
    cut: bool,
}

#[cfg(all(target_arch = "nvptx64", debug_assertions))]
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
