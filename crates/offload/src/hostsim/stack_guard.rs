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
//! stop the thread by unwinding, which drops every frame. A fault while the
//! thread is already panicking (the panic machinery allocates) cannot be
//! undone safely: the handler then says so and aborts the process.
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
}

impl Armed {
    /// For a coroutine whose stack's lowest address (guard page included,
    /// corosensei's `Stack::limit`) is `limit`.
    pub(crate) fn new(handler: CoroutineTrapHandler<()>, limit: usize) -> Armed {
        Armed { handler, guard: (limit, limit + page_size()) }
    }
}

std::thread_local! {
    static ARMED: Cell<Option<Armed>> = const { Cell::new(None) };
    static TRIPPED: Cell<bool> = const { Cell::new(false) };
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Marks `a` as the coroutine about to run on this OS thread.
pub(crate) fn arm(a: Armed) {
    ARMED.with(|c| c.set(Some(a)));
}

/// No coroutine runs on this OS thread any more.
pub(crate) fn disarm() {
    ARMED.with(|c| c.set(None));
}

/// Whether the coroutine that just returned was stopped by a stack
/// overflow (and clears the flag).
pub(crate) fn take_tripped() -> bool {
    TRIPPED.with(|t| t.replace(false))
}

/// The bytes of stack left to the running coroutine, above its guard page;
/// `None` outside one.
pub(crate) fn remaining() -> Option<usize> {
    let a = ARMED.with(|c| c.get())?;
    let here = 0u8;
    let sp = core::ptr::addr_of!(here) as usize;
    Some(sp.saturating_sub(a.guard.1))
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

    use super::{page_size, ARMED, TRIPPED};

    /// The `SIGSEGV` and `SIGBUS` actions that were installed before ours.
    static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

    const SIGNALS: [c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    pub(super) fn prepare_thread() -> bool {
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

    /// The signal handler (see the module docs).
    unsafe extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let uc = ctx as *mut libc::ucontext_t;
        // Only const-initialized thread-locals without destructors are
        // touched here (`try_with`: never during thread teardown).
        let armed = ARMED.try_with(|c| c.get()).ok().flatten();
        if let Some(a) = armed {
            // SAFETY: `info` and `uc` come from the kernel (SA_SIGINFO).
            let (addr, sp) = unsafe { ((*info).si_addr() as usize, fault_sp(uc)) };
            if (a.guard.0..a.guard.1).contains(&addr) && a.handler.stack_ptr_in_bounds(sp) {
                if std::thread::panicking() {
                    // The panic machinery (which allocates and locks) ran out
                    // of stack: its state cannot be abandoned safely.
                    let msg = b"offload: a simulated GPU thread of the host fallback overflowed its stack while panicking; aborting\n";
                    // SAFETY: write(2) and abort(3) are async-signal-safe.
                    unsafe {
                        libc::write(2, msg.as_ptr() as *const c_void, msg.len());
                        libc::abort();
                    }
                }
                let _ = TRIPPED.try_with(|t| t.set(true));
                let _ = ARMED.try_with(|c| c.set(None));
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
