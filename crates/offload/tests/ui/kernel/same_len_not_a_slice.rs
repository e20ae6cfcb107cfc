//! `same_len` names slice parameters (`&[T]` or `&mut [T]`), not values or
//! references to one element.
use offload::prelude::*;

#[kernel(same_len(a, n, r, b))]
fn lengths(a: &[f32], n: usize, r: &f32, b: &mut [f32]) {}

fn main() {}
