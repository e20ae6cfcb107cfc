//! The entry point passes slice `x` as `x__ptr` and `x__len`: no other
//! parameter may take those names (`x_len` is fine).
use offload::prelude::*;

#[kernel]
fn clashes(x: &[f32], x__len: usize, y: &mut [u8], y__ptr: u64, x_len: usize) {}

fn main() {}
