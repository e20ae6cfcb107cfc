//! What a generated launcher hands the runtime besides the kernel
//! (`kernel`): how each argument travels ([`ArgSpec`]), and for memory
//! already on the device, the buffer whose queued work the launch is
//! ordered with.

use core::marker::PhantomData;
use std::sync::Arc;

use crate::device::device_copy::{DeviceCopy, MapElem};
use crate::runtime::queue::track::Resource;

/// How one argument travels; built by the generated launcher from the user's
/// arguments, which it borrows for `'a`.
#[derive(Debug, Clone, Copy)]
pub struct ArgSpec<'a> {
    pub(crate) kind: ArgKind,
    _borrow: PhantomData<&'a ()>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum ArgKind {
    /// A value passed as a kernel parameter, read from `ptr` (the driver
    /// copies as many bytes as the entry point's parameter has).
    Value { ptr: *const u8 },
    /// Host memory copied to the device before the launch (map `to`) and, if
    /// `writeback`, back after it (map `tofrom`); the kernel gets the device
    /// pointer, and the element count if `pass_len`. `atomic` is 0, or the
    /// size of the atomic elements (4, 8) that the copy back must store
    /// atomically (see `MapElem`).
    Host { ptr: *mut u8, bytes: usize, len: usize, pass_len: bool, writeback: bool, atomic: u8 },
    /// Memory already resident on the device (a [`DeviceBuffer`](crate::DeviceBuffer)):
    /// no copy; the kernel gets `addr` (a device address on GPU backends, a
    /// host address on the host fallback), and the element count if `pass_len`.
    /// `res` is the buffer's memory, whose pending queued work the launch
    /// is ordered with (`runtime::queue::track`), read or, if `write`,
    /// written; null for memory that is not tracked (mapped pinned memory).
    /// It points into the buffer the launcher borrows for the `ArgSpec`'s
    /// lifetime.
    Resident { addr: u64, len: usize, pass_len: bool, write: bool, res: *const Arc<Resource> },
}

impl<'a> ArgSpec<'a> {
    pub(crate) fn new(kind: ArgKind) -> Self {
        ArgSpec { kind, _borrow: PhantomData }
    }

    /// The element count of a slice or buffer argument; `None` for a value.
    /// (Generated code: the host fallback's choice of how to run a launch,
    /// `__private::lockstep_pays`.)
    #[doc(hidden)]
    pub fn elements(&self) -> Option<usize> {
        match self.kind {
            ArgKind::Value { .. } => None,
            ArgKind::Host { len, .. } | ArgKind::Resident { len, .. } => Some(len),
        }
    }

    /// A by-value argument.
    pub fn value<T: DeviceCopy>(v: &'a T) -> Self {
        ArgSpec::new(ArgKind::Value { ptr: v as *const T as *const u8 })
    }

    /// A `&T` argument, mapped to the device (and back, for atomics).
    pub fn reference<T: MapElem>(r: &'a T) -> Self {
        ArgSpec::new(ArgKind::Host {
            ptr: r as *const T as *mut u8,
            bytes: core::mem::size_of::<T>(),
            len: 1,
            pass_len: false,
            writeback: T::ATOMIC_BYTES != 0,
            atomic: T::ATOMIC_BYTES as u8,
        })
    }
}

/// The tracked buffers of a launch's arguments: `(memory, written)`; an
/// iterator, so that the launch path allocates nothing for them.
pub(crate) fn tracked<'a, 'b>(
    args: &'a [ArgSpec<'b>],
) -> impl Iterator<Item = (&'a Arc<Resource>, bool)> + Clone + use<'a, 'b> {
    args.iter().filter_map(|a| match a.kind {
        // SAFETY: `res` points into a buffer the launcher borrows for as
        // long as `args` lives (see `ArgKind::Resident`).
        ArgKind::Resident { res, write, .. } if !res.is_null() => Some((unsafe { &*res }, write)),
        _ => None,
    })
}
