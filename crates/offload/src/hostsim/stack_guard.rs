//! Stack overflow of a simulated GPU thread on the host fallback: an error
//! of the launch, not the end of the process.
//!
//! The threads of a block run on `corosensei` coroutine stacks (see
//! `hostsim`), each `mmap`ed with a guard page below it. A thread that
//! recurses too deeply touches the guard page (Rust's stack probes touch
//! every page of a large frame in order, so no frame jumps over it) and the
//! kernel raises `SIGSEGV`. This module installs, once, a `SIGSEGV`/`SIGBUS`
//! handler that runs on an alternate signal stack; it recognizes a fault in
//! the guard page of the coroutine this OS thread is running (the block's
//! scheduler *arms* it before every resume) and, with corosensei's trap
//! support (`Coroutine::trap_handler`, the mechanism Wasmer uses to turn
//! guard-page hits into errors), makes the coroutine return at once. The
//! scheduler sees the *tripped* flag and fails the launch with
//! [`Error::StackOverflow`](crate::Error::StackOverflow); later launches
//! run normally. Every other fault goes to the handler that was installed
//! before (Rust's own, which reports overflows of ordinary threads' stacks,
//! or the default action).
//!
//! Abandoning a coroutine drops none of its frames. That is sound because
//! kernel code is `core`-only (it compiles for the GPU): its frames own no
//! heap memory and hold no locks, and what it writes through its arguments
//! is plain data (`DeviceCopy`), each value written whole. The runtime's own
//! entry points that take a lock, borrow a `RefCell` or allocate
//! (`shared_array!`, `sync_threads`, warp collectives, `println!`) first
//! check that [`MARGIN`] bytes of stack are left ([`check`]) and otherwise
//! stop the thread by unwinding, which drops every frame.
//!
//! Two overflows cannot be undone, and end the process at once (`abort`)
//! with one line on stderr naming the kernel, the block, the thread, the
//! stack size and `OFFLOAD_HOST_STACK_KIB`, instead of a later hang:
//! - a fault while the thread is already panicking (the panic machinery
//!   allocates and locks);
//! - a fault while code of a shared library (the C library: `malloc`,
//!   `qsort` calling back into the kernel, stdio) is in progress on the
//!   thread, which host-only code in a kernel body (`cfg(not(offload_device))`)
//!   can reach: such code may hold a lock (`malloc`'s arena lock) that
//!   abandoning its frames would never release, so that the next launch
//!   hangs. The handler walks the coroutine's frames with the platform's
//!   unwinder (libgcc's `_Unwind_Backtrace`, which steps through the signal
//!   frame; it finds code by `_dl_find_object`, which glibc documents as
//!   async-signal-safe) and recovers only if every frame's address lies in
//!   the executable segments of the object that holds this crate's code
//!   (the program itself, with the Rust code and whatever is linked into it
//!   statically), found once with `dl_iterate_phdr` before the handler is
//!   installed.
//!
//! Linux on x86_64 and aarch64 only; elsewhere an overflow ends the process
//! as before.

use core::cell::Cell;

use corosensei::trap::CoroutineTrapHandler;

/// Stack a simulated thread must have left when it enters a runtime
/// function that locks, borrows or allocates: room for that function and,
/// if the stack is too short, for unwinding.
pub(crate) const MARGIN: usize = 32 * 1024;

/// The coroutine this OS thread is running, as the signal handler needs it.
#[derive(Clone, Copy)]
pub(crate) struct Armed {
    handler: CoroutineTrapHandler<()>,
    /// `[lo, hi)`: the guard page(s) below the usable stack.
    guard: (usize, usize),
    /// The highest address of the stack (corosensei's `Stack::base`).
    base: usize,
    /// The stack size that `OFFLOAD_HOST_STACK_KIB` asked for, in KiB.
    kib: usize,
}

impl Armed {
    /// For a coroutine whose stack's lowest address (guard page included,
    /// corosensei's `Stack::limit`) is `limit` and highest `base`, made for
    /// `stack_size` bytes of stack.
    pub(crate) fn new(handler: CoroutineTrapHandler<()>, limit: usize, base: usize, stack_size: usize) -> Armed {
        Armed { handler, guard: (limit, limit + page_size()), base, kib: stack_size / 1024 }
    }
}

/// The kernel a worker thread runs, for the message of an overflow that
/// ends the process: `module_path::name` or `module_path::name::<instance>`
/// (as `KernelInfo::path` spells it, without allocating).
#[derive(Clone, Copy)]
pub(crate) struct KernelName {
    pub module_path: &'static str,
    pub name: &'static str,
    pub instance: &'static str,
}

std::thread_local! {
    /// The running coroutine's `Armed`, or null (see [`arm`]).
    static ARMED: Cell<*const Armed> = const { Cell::new(core::ptr::null()) };
    static TRIPPED: Cell<bool> = const { Cell::new(false) };
    static KERNEL: Cell<Option<KernelName>> = const { Cell::new(None) };
}

/// Names the kernel whose blocks this OS thread runs from now on (`None`:
/// none).
pub(crate) fn set_kernel(k: Option<KernelName>) {
    KERNEL.with(|c| c.set(k));
}

fn page_size() -> usize {
    static PAGE: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
    match PAGE.load(core::sync::atomic::Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let p = if p > 0 { p as usize } else { 4096 };
            PAGE.store(p, core::sync::atomic::Ordering::Relaxed);
            p
        }
        p => p,
    }
}

/// Marks `a` as the coroutine about to run on this OS thread (one
/// thread-local store: the scheduler arms before every resume).
///
/// # Safety
/// `a` stays valid and unchanged until [`disarm`] is called on this OS
/// thread.
pub(crate) unsafe fn arm(a: &Armed) {
    ARMED.with(|c| c.set(a));
}

/// No coroutine runs on this OS thread any more.
pub(crate) fn disarm() {
    ARMED.with(|c| c.set(core::ptr::null()));
}



/// Whether the coroutine that just returned was stopped by a stack
/// overflow (and clears the flag).
pub(crate) fn take_tripped() -> bool {
    TRIPPED.with(|t| t.replace(false))
}

/// Whether this OS thread is running a simulated GPU thread (a coroutine
/// armed by its scheduler), not the scheduler or other runtime code.
pub(crate) fn in_simulated_thread() -> bool {
    !ARMED.with(|c| c.get()).is_null()
}

/// The bytes of stack left to the running coroutine, above its guard page;
/// `None` outside one.
pub(crate) fn remaining() -> Option<usize> {
    let p = ARMED.with(|c| c.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null only between `arm` and `disarm`, while it is valid
    // (`arm`'s contract).
    let top = unsafe { (*p).guard.1 };
    let here = 0u8;
    let sp = core::ptr::addr_of!(here) as usize;
    Some(sp.saturating_sub(top))
}

/// Stops the calling simulated thread, by unwinding, if less than
/// [`MARGIN`] bytes of its stack are left: called by the runtime's entry
/// points that lock, borrow or allocate, so that a guard-page hit (which
/// unwinds nothing) never happens inside them.
#[inline]
pub(crate) fn check() {
    if remaining().is_some_and(|r| r < MARGIN) {
        std::panic::resume_unwind(std::boxed::Box::new(crate::hostsim::failure::Abort::StackOverflow));
    }
}

/// Installs the handler (once per process) and makes sure this OS thread
/// has an alternate signal stack for it. Returns whether overflows are
/// caught on this platform.
pub(crate) fn prepare_thread() -> bool {
    imp::prepare_thread()
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    use core::ffi::{c_int, c_void};
    use core::mem::MaybeUninit;
    use std::sync::OnceLock;

    use super::{page_size, Armed, ARMED, KERNEL, TRIPPED};
    use crate::device::thread::CTX;

    /// The `SIGSEGV` and `SIGBUS` actions that were installed before ours.
    static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

    /// The executable segments `[start, end)` of the object that holds this
    /// crate's code (the program's own code), at most 8 (an ELF object has
    /// one or two); filled before the handler is installed, read by it.
    static OWN_CODE: OnceLock<([(usize, usize); 8], usize)> = OnceLock::new();

    /// The executable segments of the loaded object that contains `addr`.
    fn code_segments_of(addr: usize) -> ([(usize, usize); 8], usize) {
        struct Search {
            addr: usize,
            found: ([(usize, usize); 8], usize),
        }
        unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
            // SAFETY: `data` is the `Search` passed below; `info` and its
            // program headers are valid during the callback (dl_iterate_phdr).
            unsafe {
                let search = &mut *(data as *mut Search);
                let info = &*info;
                let headers = core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
                let mut segments = [(0usize, 0usize); 8];
                let mut n = 0;
                for h in headers.iter().filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0) {
                    let start = info.dlpi_addr as usize + h.p_vaddr as usize;
                    if n < segments.len() {
                        segments[n] = (start, start + h.p_memsz as usize);
                        n += 1;
                    }
                }
                if segments[..n].iter().any(|&(lo, hi)| (lo..hi).contains(&search.addr)) {
                    search.found = (segments, n);
                    return 1;
                }
                0
            }
        }
        let mut search = Search { addr, found: ([(0, 0); 8], 0) };
        // SAFETY: `each` matches the callback type and only reads what
        // dl_iterate_phdr hands it; `search` outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(each), &mut search as *mut Search as *mut c_void) };
        search.found
    }

    fn own_code(pc: usize) -> bool {
        OWN_CODE.get().is_some_and(|(segments, n)| segments[..*n].iter().any(|&(lo, hi)| (lo..hi).contains(&pc)))
    }

    // The platform unwinder (libgcc_s, which `std` links on Linux): the
    // Itanium C++ ABI's base unwinding interface.
    #[repr(C)]
    struct UnwindContext {
        _private: [u8; 0],
    }
    type UnwindTrace = unsafe extern "C" fn(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int;
    const URC_NO_REASON: c_int = 0;
    const URC_END_OF_STACK: c_int = 5;
    extern "C" {
        fn _Unwind_Backtrace(trace: UnwindTrace, arg: *mut c_void) -> c_int;
        fn _Unwind_GetIPInfo(ctx: *mut UnwindContext, ip_before_insn: *mut c_int) -> usize;
        fn _Unwind_GetCFA(ctx: *mut UnwindContext) -> usize;
    }

    /// Where the walk of [`foreign_code_on_stack`] is.
    struct Walk {
        /// The faulting instruction: frames before it are the handler's.
        pc: usize,
        /// The coroutine's stack, `(lowest address, base)`, guard page included
        /// (the faulting frame may lie in it).
        stack: (usize, usize),
        reached: bool,
        foreign: bool,
        frames: usize,
    }

    unsafe extern "C" fn visit(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the `Walk` of `foreign_code_on_stack`; `ctx` is
        // the unwinder's context for this frame.
        unsafe {
            let walk = &mut *(arg as *mut Walk);
            let mut before: c_int = 0;
            let ip = _Unwind_GetIPInfo(ctx, &mut before);
            if !walk.reached {
                // The handler's frames and the signal trampoline come first.
                walk.reached = ip == walk.pc;
                if !walk.reached {
                    return URC_NO_REASON;
                }
            }
            let cfa = _Unwind_GetCFA(ctx);
            if ip == 0 || !(walk.stack.0..=walk.stack.1).contains(&cfa) || walk.frames > 1_000_000 {
                // Past the coroutine's first frame (into the scheduler's
                // stack) or at the end: done.
                return URC_END_OF_STACK;
            }
            walk.frames += 1;
            // A return address points after its call: look at the call.
            let at = if before != 0 { ip } else { ip - 1 };
            if !own_code(at) {
                walk.foreign = true;
                return URC_END_OF_STACK;
            }
            URC_NO_REASON
        }
    }

    /// Whether code outside the program's own (a shared library's) is in
    /// progress on the coroutine `a`, which faulted at `pc`. Called by the
    /// signal handler.
    fn foreign_code_on_stack(a: &Armed, pc: usize) -> bool {
        if !own_code(pc) {
            return true;
        }
        let mut walk = Walk { pc, stack: (a.guard.0, a.base), reached: false, foreign: false, frames: 0 };
        // SAFETY: `visit` matches the callback type and reads only `walk`
        // and the unwinder's context.
        unsafe { _Unwind_Backtrace(visit, &mut walk as *mut Walk as *mut c_void) };
        walk.foreign
    }

    /// A byte buffer for the abort message (no allocation in the handler).
    struct Line {
        buf: [u8; 768],
        len: usize,
    }

    impl core::fmt::Write for Line {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let n = s.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
            self.len += n;
            Ok(())
        }
    }

    /// Writes why the process ends (one line naming the kernel, block,
    /// thread and stack) and aborts. Only async-signal-safe calls.
    fn abort_with(a: &Armed, why: &str) -> ! {
        use core::fmt::Write as _;
        let mut line = Line { buf: [0; 768], len: 0 };
        let ctx = CTX.try_with(|c| c.get()).ok();
        let kernel = KERNEL.try_with(|c| c.get()).ok().flatten();
        let _ = write!(line, "offload: GPU thread ");
        if let Some(c) = ctx {
            let (t, b) = (c.thread, c.block);
            let _ = write!(line, "({}, {}, {}) of block ({}, {}, {}) ", t.x, t.y, t.z, b.x, b.y, b.z);
        }
        if let Some(k) = kernel {
            let _ = write!(line, "of kernel `{}::{}", k.module_path, k.name);
            let _ = if k.instance.is_empty() { write!(line, "` ") } else { write!(line, "::<{}>` ", k.instance) };
        }
        let _ = writeln!(
            line,
            "overflowed its {} KiB stack on the host fallback {why}; ending the process. Raise OFFLOAD_HOST_STACK_KIB \
             (now {}) or recurse less deeply",
            a.kib, a.kib
        );
        // SAFETY: write(2) and abort(3) are async-signal-safe; `line.buf`
        // holds `line.len` bytes.
        unsafe {
            libc::write(2, line.buf.as_ptr() as *const c_void, line.len);
            libc::abort();
        }
    }

    const SIGNALS: [c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    pub(super) fn prepare_thread() -> bool {
        OWN_CODE.get_or_init(|| code_segments_of(on_fault as *const () as usize));
        PREVIOUS.get_or_init(install);
        ensure_altstack();
        true
    }

    fn install() -> [libc::sigaction; 2] {
        let mut previous = [const { MaybeUninit::<libc::sigaction>::zeroed() }; 2];
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: an all-zero `sigaction` is a valid value (no flags, empty
            // mask); the handler has the `SA_SIGINFO` signature; `previous[i]`
            // is valid for writes. Installing happens once, inside the
            // OnceLock's initialization, so the handler only runs once
            // `PREVIOUS` is being set; it falls back to the default action
            // until then (see `chain`).
            unsafe {
                let mut action: libc::sigaction = core::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, previous[i].as_mut_ptr());
            }
        }
        // SAFETY: `sigaction` wrote both (or left them zero: SIG_DFL).
        previous.map(|p| unsafe { p.assume_init() })
    }

    /// A thread's alternate signal stack, if this module made it.
    struct AltStack {
        map: *mut c_void,
        len: usize,
    }

    impl Drop for AltStack {
        fn drop(&mut self) {
            // SAFETY: disables this thread's alternate stack (ours) before
            // unmapping it; the thread is exiting, no handler runs on it.
            unsafe {
                let disable = libc::stack_t { ss_sp: core::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
                libc::sigaltstack(&disable, core::ptr::null_mut());
                libc::munmap(self.map, self.len);
            }
        }
    }

    std::thread_local! {
        static ALT_STACK: core::cell::RefCell<Option<AltStack>> = const { core::cell::RefCell::new(None) };
    }

    /// An alternate signal stack for this thread, unless it has one (Rust's
    /// runtime gives one to the threads it starts).
    fn ensure_altstack() {
        // SAFETY: queries this thread's alternate stack into `current`.
        let mut current: libc::stack_t = unsafe { core::mem::zeroed() };
        unsafe { libc::sigaltstack(core::ptr::null(), &mut current) };
        if current.ss_flags & libc::SS_DISABLE == 0 {
            return;
        }
        let page = page_size();
        let size = 64 * 1024;
        let len = size + page;
        // SAFETY: a fresh private anonymous mapping; the lowest page stays
        // inaccessible as a guard; the rest becomes this thread's alternate
        // stack, unmapped (after disabling it) when the thread exits.
        unsafe {
            let map = libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if map == libc::MAP_FAILED {
                return;
            }
            libc::mprotect(map, page, libc::PROT_NONE);
            let stack = libc::stack_t { ss_sp: (map as *mut u8).add(page) as *mut c_void, ss_flags: 0, ss_size: size };
            if libc::sigaltstack(&stack, core::ptr::null_mut()) != 0 {
                libc::munmap(map, len);
                return;
            }
            ALT_STACK.with(|s| *s.borrow_mut() = Some(AltStack { map, len }));
        }
    }

    /// The stack pointer at the fault.
    ///
    /// # Safety
    /// `uc` is the `ucontext_t` the kernel passed to the handler.
    unsafe fn fault_sp(uc: *const libc::ucontext_t) -> usize {
        // SAFETY: caller's contract.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            return (*uc).uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
            #[cfg(target_arch = "aarch64")]
            return (*uc).uc_mcontext.sp as usize;
        }
    }

    /// Makes the interrupted thread continue in corosensei's trap trampoline.
    ///
    /// # Safety
    /// As `fault_sp`; `regs` came from `setup_trap_handler` for the
    /// coroutine whose stack the fault is on.
    unsafe fn redirect(uc: *mut libc::ucontext_t, regs: corosensei::trap::TrapHandlerRegs) {
        // SAFETY: caller's contract; these are the registers corosensei
        // documents for this platform.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            {
                let corosensei::trap::TrapHandlerRegs { rip, rsp, rbp, rdi, rsi } = regs;
                let g = &mut (*uc).uc_mcontext.gregs;
                g[libc::REG_RIP as usize] = rip as i64;
                g[libc::REG_RSP as usize] = rsp as i64;
                g[libc::REG_RBP as usize] = rbp as i64;
                g[libc::REG_RDI as usize] = rdi as i64;
                g[libc::REG_RSI as usize] = rsi as i64;
            }
            #[cfg(target_arch = "aarch64")]
            {
                let corosensei::trap::TrapHandlerRegs { pc, sp, x0, x1, x29, lr } = regs;
                let m = &mut (*uc).uc_mcontext;
                m.pc = pc;
                m.sp = sp;
                m.regs[0] = x0;
                m.regs[1] = x1;
                m.regs[29] = x29;
                m.regs[30] = lr;
            }
        }
    }

    /// The faulting instruction's address.
    ///
    /// # Safety
    /// As `fault_sp`.
    unsafe fn fault_pc(uc: *const libc::ucontext_t) -> usize {
        // SAFETY: caller's contract.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            return (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
            #[cfg(target_arch = "aarch64")]
            return (*uc).uc_mcontext.pc as usize;
        }
    }

    /// The signal handler (see the module docs).
    unsafe extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let uc = ctx as *mut libc::ucontext_t;
        // Only const-initialized thread-locals without destructors are
        // touched here (`try_with`: never during thread teardown).
        let p = ARMED.try_with(|c| c.get()).unwrap_or(core::ptr::null());
        // SAFETY: non-null only between `arm` and `disarm`, while it is
        // valid (`arm`'s contract); the fault interrupted this OS thread.
        let armed = (!p.is_null()).then(|| unsafe { *p });
        if let Some(a) = armed {
            // SAFETY: `info` and `uc` come from the kernel (SA_SIGINFO).
            let (addr, sp) = unsafe { ((*info).si_addr() as usize, fault_sp(uc)) };
            if (a.guard.0..a.guard.1).contains(&addr) && a.handler.stack_ptr_in_bounds(sp) {
                if std::thread::panicking() {
                    // The panic machinery (which allocates and locks) ran out
                    // of stack: its state cannot be abandoned safely.
                    abort_with(
                        &a,
                        "while panicking (the panic machinery, which allocates and locks, cannot be stopped)",
                    );
                }
                // SAFETY: as above.
                if foreign_code_on_stack(&a, unsafe { fault_pc(uc) }) {
                    abort_with(
                        &a,
                        "while C library code (a shared library's: malloc, qsort calling back, stdio, ...) was in \
                         progress on it, which may hold locks that no later call could take, so the thread cannot be \
                         stopped alone",
                    );
                }
                let _ = TRIPPED.try_with(|t| t.set(true));
                let _ = ARMED.try_with(|c| c.set(core::ptr::null()));
                // SAFETY: the fault is a guard-page hit of the coroutine `a`
                // describes, which is running on this thread (armed by its
                // scheduler for this resume) and not dropped; its stack
                // pointer is in bounds (checked). Abandoning its frames is
                // sound as the module docs explain. The registers are
                // updated as `setup_trap_handler` requires.
                unsafe {
                    let regs = a.handler.setup_trap_handler(|| ());
                    redirect(uc, regs);
                }
                return;
            }
        }
        // SAFETY: forwards the same signal with the kernel's arguments.
        unsafe { chain(sig, info, ctx) }
    }

    /// Hands a fault that is not ours to the action installed before.
    ///
    /// # Safety
    /// Called from the signal handler with its arguments.
    unsafe fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
        let previous = PREVIOUS.get().map(|p| p[i]);
        let handler = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        let flags = previous.map_or(0, |p| p.sa_flags);
        // SAFETY: calls the previous handler with the signature its flags
        // declare; for SIG_DFL/SIG_IGN, restores the default action and
        // returns, so that the faulting instruction faults again and the
        // process ends as it would have without us.
        unsafe {
            if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
                let mut dfl: libc::sigaction = core::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, core::ptr::null_mut());
            } else if flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = core::mem::transmute(handler);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(c_int) = core::mem::transmute(handler);
                f(sig);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod imp {
    pub(super) fn prepare_thread() -> bool {
        false
    }
}
