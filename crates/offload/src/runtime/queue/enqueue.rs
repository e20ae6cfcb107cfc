//! Queued launches: where `kernel::on(q, …)` may enqueue ([`Enqueue`]),
//! which arguments each place accepts ([`QueueSliceArg`],
//! [`QueueSliceArgMut`]), and the generic front that enqueues a launch.

use std::boxed::Box;

use super::graph::Capture;
use super::scope::{Scope, ScopeState};
use super::track::{self, Resource};
use super::{Imp, Queue, QueueInner};
use crate::runtime::args::{MapIn, MapInOut, SliceArg, SliceArgMut};
use crate::runtime::device_backend::Concrete;
use crate::runtime::error::{Error, Result};
use crate::runtime::host::Host;
use crate::runtime::kernel::KernelInfo;
use crate::runtime::select;
use crate::runtime::spec::{self, ArgSpec};
use crate::{DeviceBuffer, DeviceCopy, LaunchConfig, MapElem};
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// Marker of [`Enqueue::Memory`]: only device-resident buffers (a bare
/// [`Queue`] or a [`Capture`]).
#[doc(hidden)]
pub enum OutsideScope {}

/// Marker of [`Enqueue::Memory`]: host memory too (a [`Scope`]).
#[doc(hidden)]
pub enum InScope {}

/// Where a queued launch (`kernel::on(q, …)`) can go: `&Queue`, a
/// [`Scope`] (`offload::scope(&q, |s| …)`) or a [`Capture`]
/// (`q.capture(|g| …)`). `'a` is how long the launch's borrowed arguments
/// must live: for a scope, until the scope ends.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a queue, scope or capture that a queued launch can go to",
    label = "pass `&Queue`, a scope's `s` or a capture's `g` here",
    note = "for an `Arc<Queue>` or a `Box<Queue>` `q`, pass `&*q` (docs/async.md, section 2)"
)]
pub trait Enqueue<'a>: sealed::Sealed {
    /// Which arguments are accepted: [`OutsideScope`] (buffers only) or
    /// [`InScope`] (host memory too).
    type Memory;
    #[doc(hidden)]
    fn target(&'a self) -> Target<'a>;
}

impl sealed::Sealed for Queue {}
impl<'a> Enqueue<'a> for Queue {
    type Memory = OutsideScope;
    fn target(&'a self) -> Target<'a> {
        Target(Dest::Queue(&self.inner))
    }
}

impl sealed::Sealed for Scope<'_, '_> {}
impl<'scope, 'env> Enqueue<'scope> for Scope<'scope, 'env> {
    type Memory = InScope;
    fn target(&'scope self) -> Target<'scope> {
        Target(Dest::Scope(&self.state))
    }
}

impl sealed::Sealed for Capture<'_> {}
impl<'a, 'q> Enqueue<'a> for Capture<'q> {
    type Memory = OutsideScope;
    fn target(&'a self) -> Target<'a> {
        Target(Dest::Capture(self.queue()))
    }
}

/// Where one launch goes (generated code only).
#[doc(hidden)]
pub struct Target<'a>(Dest<'a>);

#[derive(Clone, Copy)]
enum Dest<'a> {
    /// The blocking launcher: run now, return when done.
    Blocking,
    Queue(&'a std::sync::Arc<QueueInner>),
    Scope(&'a ScopeState),
    Capture(&'a std::sync::Arc<QueueInner>),
}

impl Target<'_> {
    /// The blocking launcher's target.
    pub fn blocking() -> Self {
        Target(Dest::Blocking)
    }
}

/// Accepted where a kernel takes `&[T]` in a queued launch on a target
/// that needs arguments to live for `'q` and whose [`Enqueue::Memory`] is
/// `M`: `&DeviceBuffer<T>` everywhere, borrowed for as short as the call
/// (its pending work is tracked); inside a scope also host memory
/// (`&Vec<T>`, `&[T]`, `&[T; N]`, `&Box<[T]>`, `&PinnedBuffer<T>`),
/// borrowed for `'q`, until the scope ends.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where the kernel takes `&[{T}]` in a queued launch here",
    label = "host memory in a queued launch outside `offload::scope`, or not a slice of `{T}`",
    note = "outside `offload::scope(&q, |s| …)` a queued launch takes only `&DeviceBuffer<{T}>`: host memory must stay borrowed until the launch has finished, which only a scope guarantees; a graph (`Queue::capture`) takes `DeviceBuffer`s only (docs/async.md, sections 2, 4 and 6)"
)]
pub trait QueueSliceArg<'q, T, M> {
    /// The view the launch maps.
    #[doc(hidden)]
    fn map_in(&self) -> MapIn<'_, T>;
}

/// Accepted where a kernel takes `&mut [T]` in a queued launch; see
/// [`QueueSliceArg`]: `&mut DeviceBuffer<T>` everywhere, inside a scope
/// also `&mut Vec<T>`, `&mut [T]`, `&mut [T; N]`, `&mut Box<[T]>`,
/// `&mut PinnedBuffer<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed where the kernel takes `&mut [{T}]` in a queued launch here",
    label = "host memory in a queued launch outside `offload::scope`, or not a mutable slice of `{T}`",
    note = "outside `offload::scope(&q, |s| …)` a queued launch takes only `&mut DeviceBuffer<{T}>`: host memory must stay borrowed until the launch has finished, which only a scope guarantees; a graph (`Queue::capture`) takes `DeviceBuffer`s only (docs/async.md, sections 2, 4 and 6)"
)]
// No bound on `T` here: a kernel whose element type is not `DeviceCopy` is
// reported once, at its blocking launcher's parameter.
pub trait QueueSliceArgMut<'q, T, M> {
    /// The view the launch maps.
    #[doc(hidden)]
    fn map_inout(&mut self) -> MapInOut<'_, T>;
}

impl<'q, T: DeviceCopy, M> QueueSliceArg<'q, T, M> for &DeviceBuffer<T> {
    fn map_in(&self) -> MapIn<'_, T> {
        SliceArg::map_in(*self)
    }
}
impl<'q, T: DeviceCopy, M> QueueSliceArgMut<'q, T, M> for &mut DeviceBuffer<T> {
    fn map_inout(&mut self) -> MapInOut<'_, T> {
        SliceArgMut::map_inout(*self)
    }
}

/// Host memory: only in a scope, borrowed for the scope's `'q`.
macro_rules! host_memory {
    ($($ty:ty $(, $n:ident)?);* $(;)?) => {$(
        impl<'q, T: MapElem $(, const $n: usize)?> QueueSliceArg<'q, T, InScope> for &'q $ty {
            fn map_in(&self) -> MapIn<'_, T> {
                SliceArg::map_in(*self)
            }
        }
    )*};
}
host_memory!([T]; std::vec::Vec<T>; [T; N], N; Box<[T]>);
impl<'q, T: DeviceCopy> QueueSliceArg<'q, T, InScope> for &'q crate::PinnedBuffer<T> {
    fn map_in(&self) -> MapIn<'_, T> {
        SliceArg::map_in(*self)
    }
}

macro_rules! host_memory_mut {
    ($($ty:ty $(, $n:ident)?);* $(;)?) => {$(
        impl<'q, T: DeviceCopy $(, const $n: usize)?> QueueSliceArgMut<'q, T, InScope> for &'q mut $ty {
            fn map_inout(&mut self) -> MapInOut<'_, T> {
                SliceArgMut::map_inout(*self)
            }
        }
    )*};
}
host_memory_mut!([T]; std::vec::Vec<T>; [T; N], N; Box<[T]>; crate::PinnedBuffer<T>);

/// Required of the target of a queued launch of a kernel with `&T` or
/// `&mut T` parameters, which are host memory.
#[diagnostic::on_unimplemented(
    message = "a kernel's `&T` / `&mut T` parameter is host memory: it cannot be passed in a queued launch outside `offload::scope`",
    label = "launch this kernel inside `offload::scope(&q, |s| kernel::on(s, …))`, or take the value by value or in a `DeviceBuffer`"
)]
pub trait HostReferences {}
impl HostReferences for InScope {}

/// The generic front of a launch of `kernel` (generated code only):
/// blocking, or enqueued on `target`. `host` runs the simulated threads of
/// one runner of the host scheduler (`__private::host_threads`; host
/// fallback only).
///
/// # Safety
/// For a queued target, the memory that `args` and `host` refer to stays
/// valid until the launch has finished: `kernel::on` guarantees it by its
/// signature (buffers are tracked, host memory only in a scope).
#[doc(hidden)]
pub unsafe fn launch_to<'a, F: Fn() + Send + Sync + 'a>(
    target: Target<'a>,
    kernel: &'static KernelInfo,
    cfg: LaunchConfig,
    args: &[ArgSpec<'a>],
    host: F,
) -> Result<()> {
    let target = target.0;
    let queue = match target {
        Dest::Blocking => return crate::runtime::launch::launch(kernel, cfg, args, &host),
        Dest::Queue(q) => q,
        Dest::Capture(q) => q,
        Dest::Scope(s) => &s.queue,
    };
    if let Err(reason) = cfg.validate() {
        return Err(Error::from(crate::error::InvalidLaunch { kernel: kernel.path(), reason }));
    }
    if cfg.threads() == 0 {
        return Ok(());
    }
    let backend = queue.device.concrete()?;
    crate::runtime::device_backend::check_args(kernel, queue.device, args)?;
    trace_queued(kernel, queue, &cfg);
    let _replays = super::capture::hold();
    let buffers = spec::tracked(args);
    let mut seq = queue.lock_submit();
    let capturing = super::capture::is_capturing(queue);
    super::capture::refuse_captured_by_another_thread(queue, "enqueue a launch")?;
    if capturing {
        capture_launch(target, queue, kernel, buffers.clone())?;
    } else {
        super::capture::refuse_other_queue_in_capture("enqueue a launch")?;
        track::order_before(queue, &mut seq, buffers.clone().map(|(r, w)| (&r.tracker, w)))?;
    }
    match (&queue.imp, backend) {
        (Imp::Host(h), Concrete::Host(backend)) => {
            backend.check_launch(kernel, &cfg)?;
            // SAFETY: the caller's contract.
            let op = unsafe { host_op(backend, kernel, cfg, host) };
            if capturing {
                super::capture::push_host_op(queue, op);
                return Ok(());
            }
            *seq += 1;
            h.send(*seq, Box::new(move || op()));
        }
        (Imp::Cuda(c), Concrete::Cuda(backend)) => {
            let scope = match target {
                Dest::Scope(s) => Some(&s.copies),
                _ => None,
            };
            // Noted before the launch too: a panic found by another
            // queue's check as soon as the kernel runs must see it unchecked
            // (the CUDA backend's `queue::attrib`); and after it, in case
            // a check of this queue on another thread came in between.
            if !capturing {
                c.note_kernel(queue.id, kernel);
            }
            c.launch(backend, kernel, &cfg, args, scope)?;
            if capturing {
                return Ok(());
            }
            *seq += 1;
            c.note_kernel(queue.id, kernel);
        }
        _ => unreachable!("a queue's implementation is its device's backend's"),
    }
    for (r, write) in buffers {
        r.tracker.record(queue, *seq, write);
    }
    Ok(())
}

/// `OFFLOAD_TRACE`: one line per queued launch.
fn trace_queued(kernel: &KernelInfo, queue: &QueueInner, cfg: &LaunchConfig) {
    if select::runtime().trace {
        std::eprintln!(
            "offload: {} queued on queue {} of {} (grid {}, block {})",
            kernel.path(),
            queue.id,
            queue.device,
            cfg.grid,
            cfg.block
        );
    }
}

/// Notes a launch on `queue`, which is being captured, in its graph; a
/// launch in a scope is refused (a graph cannot keep host memory borrowed).
fn capture_launch<'r>(
    target: Dest<'_>,
    queue: &QueueInner,
    kernel: &'static KernelInfo,
    buffers: impl IntoIterator<Item = (&'r Arc<Resource>, bool)>,
) -> Result<()> {
    if let Dest::Scope(_) = target {
        return Err(Error::from(crate::error::Queue {
            op: "capture a launch",
            reason: std::format!(
                "kernel `{}` was launched in a scope on a queue being captured: a graph cannot keep host memory \
                 borrowed; launch it with `kernel::on(g, …)` and DeviceBuffers",
                kernel.path()
            ),
        }));
    }
    super::capture::note_launch(queue, kernel, buffers);
    Ok(())
}

/// The host fallback's operation for one queued launch: `backend` runs
/// `host`'s threads for every block of `cfg`.
///
/// # Safety
/// Everything `host` borrows outlives the launch (and, captured in a
/// graph, every replay).
unsafe fn host_op<'a, F: Fn() + Send + Sync + 'a>(
    backend: &'static Host,
    kernel: &'static KernelInfo,
    cfg: LaunchConfig,
    host: F,
) -> super::capture::HostOp {
    let body: Arc<dyn Fn() + Send + Sync + 'a> = Arc::new(host);
    // SAFETY: the caller guarantees that everything `host` borrows outlives
    // the launch (and, captured in a graph, every replay: only tracked
    // buffers and values, which the graph keeps); the lifetime is only
    // erased, the layout is the same.
    let body: Arc<dyn Fn() + Send + Sync + 'static> = unsafe { core::mem::transmute(body) };
    Arc::new(move || backend.run(kernel, &cfg, &*body))
}
