//! `same_len` names parameters of the kernel.
use offload::prelude::*;

#[kernel(same_len(a, c))]
fn lengths(a: &[f32], b: &mut [f32]) {}

fn main() {}
