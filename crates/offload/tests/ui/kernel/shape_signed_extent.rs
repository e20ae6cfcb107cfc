//! An extent of `shape` is an unsigned integer: a signed or float parameter
//! is an error at the extent.
use offload::prelude::*;

#[kernel(shape(out = (w, h)))]
fn signed(out: &mut [f32], w: i32, h: f32) {}

fn main() {}
