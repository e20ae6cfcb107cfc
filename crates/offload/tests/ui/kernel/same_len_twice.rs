//! Each slice is named once in `same_len`.
use offload::prelude::*;

#[kernel(same_len(a, b, a))]
fn twice(a: &[f32], b: &mut [f32]) {}

fn main() {}
