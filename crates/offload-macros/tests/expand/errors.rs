//! Kernels the macros reject: each error is a `compile_error!` at the
//! offending token, all of a kernel's errors together, and the function
//! kept (host only, body replaced) so the rest of the crate still resolves.
//! (Expanded by `src/expand_tests.rs`; not compiled.)

#[kernel]
const fn constant(x: &mut [f32]) {}

#[kernel]
async unsafe extern "C" fn several<T, const N: usize>(self, (a, b): (f32, f32), ref c: u32, d @ _: u8) -> f32 {
    0.0
}

#[kernel]
fn owning(v: Vec<f32>, s: &String, b: &mut [Box<u8>], m: std::collections::HashMap<u32, u32>, a: [Rc<u8>; 2], ok: &[f32]) {}

#[kernel]
fn clashes(x: &[f32], x__len: usize, y: &mut [u8], y__ptr: u64) {}

#[kernel(same_len(a))]
fn one_name(a: &[f32], b: &[f32]) {}

#[kernel(same_len(a, a))]
fn twice(a: &[f32], b: &[f32]) {}

#[kernel(same_len(a, s, r, z))]
fn not_slices(a: &[f32], s: f32, r: &f32) {}

#[kernel(shape(a = (w, h), s = (w, r), nope = (w, h)))]
fn bad_shapes(a: &[f32], s: &mut [f32], w: u32, h: u32, r: &u32) {}

#[kernel(shape(s = (w, h, d, e)))]
fn four_extents(s: &mut [f32], w: u32, h: u32) {}

#[kernel(same_length(a, b))]
fn other_word(a: &[f32], b: &[f32]) {}

#[kernel(same_len = 1)]
fn name_value(a: &[f32], b: &[f32]) {}

#[kernel(same_len(a + b))]
fn expression(a: &[f32], b: &[f32]) {}

#[kernel(fast)]
fn bare_word(a: &[f32], b: &[f32]) {}

#[kernel]
fn tuple_return() -> (u32,) {
    (0,)
}
