//! A kernel runs on the GPU at launch: it cannot be a `const fn`.
use offload::prelude::*;

#[kernel]
const fn zero(out: &mut [f32]) {}

fn main() {}
