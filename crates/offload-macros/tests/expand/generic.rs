//! Generic kernels: bounds added by mapping, and the instantiations the
//! host code uses (from `instances/`; a kernel without a list gets no
//! device entry). (Expanded by `src/expand_tests.rs`; not compiled.)
use core::ops::Mul;
use offload::prelude::*;

#[kernel]
fn scale<T>(k: T, v: &mut [T])
where
    T: Copy + Mul<Output = T>,
{
    if let Some((_, x)) = v.at_thread() {
        *x = *x * k;
    }
}

#[kernel]
fn widen<S: Copy + Into<D>, D: Copy>(x: &[S], y: &mut [D]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = x[i].into();
    }
}

/// Types that mention a parameter (`[T; 2]`, `Pair<T>`) are bounded as a
/// whole; the same bound is added once.
#[kernel(same_len(a, b))]
pub fn pairs<'a, T: Copy>(p: Pair<T>, q: Pair<T>, a: &'a [[T; 2]], b: &mut [T], r: &T, w: &mut T, n: u32) {}

#[kernel]
fn unlisted<T: Copy>(x: &mut [T]) {}

/// Its list is a directory (`instances/<symbol>.txt/`): an error for the
/// device pass, at the kernel's name.
#[kernel]
fn unreadable<T: Copy>(x: &mut [T]) {}
