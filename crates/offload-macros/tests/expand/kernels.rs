//! Kernels that compile: every parameter mapping, attributes, visibility,
//! names, `same_len`. (Expanded by `src/expand_tests.rs`; not compiled.)
use offload::prelude::*;

/// Doc comments and other attributes go to the body, the entry and the launcher.
#[kernel]
#[allow(clippy::many_single_char_names)]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi += a * x[i];
    }
}

#[offload::kernel]
pub(crate) fn references<'a>(mut n: u32, s: &'a Params, t: &mut u64, _: u8, _: &[u16]) {
    n += s.k;
    if let Some((_, t)) = t.at_thread() {
        *t = n as u64;
    }
}

#[kernel(same_len(a, b, out))]
fn add(a: &[f32], b: &'static [f32], out: &mut [f32]) {
    for (i, o) in out.grid_stride() {
        *o = a[i] + b[i];
    }
}

#[kernel(same_len(x, y,))]
fn two(x: &[u8], y: &mut [u8]) {}

#[kernel(same_len(a, img), shape(img = (w, h), vol = (w, 4, d)))]
fn shaped(w: u32, h: usize, d: u64, a: &[f32], img: &mut [f32], vol: &mut [u8]) {
    if let Some(([x, y], p)) = img.at_thread() {
        *p = a[x + y];
    }
}

#[kernel]
fn r#type(r#in: [f32; 4], out: &mut [[f32; 4]]) {}

#[kernel]
fn größe(wert: (u32, u64), out: &mut [(u32, u64)]) {}

#[kernel]
fn nothing() {}

#[kernel]
fn returns_unit(x: &mut [i32]) -> () {}

#[kernel]
fn grouped(x: &(f32), y: &mut ([f64])) {}

#[kernel]
fn paths(p: crate::geometry::Point, q: &[::core::num::Wrapping<u32>], r: &mut core::primitive::u8) {}

mod inner {
    use super::*;

    #[kernel]
    pub fn in_module(x: &mut [u32]) {}
}

/// Barriers in the body: on the host an `async fn` whose `sync_threads()`
/// calls are awaits (the one in the closure stays a call), run in phases.
#[kernel]
fn barriers(n: u32, out: &mut [f32]) {
    let s = offload::shared_array!(f32; 64);
    let mut acc = 0.0f32;
    for t in 0..n {
        s.set(offload::thread_idx().x as usize, t as f32);
        offload::sync_threads();
        acc += s.get(0);
        (|| sync_threads())();
    }
    if let Some((_, o)) = out.at_thread() {
        *o = acc;
    }
}
