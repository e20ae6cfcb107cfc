//! A kernel is launched by safe code: `unsafe` goes on blocks in its body.
use offload::prelude::*;

#[kernel]
unsafe fn zero(out: &mut [f32]) {}

fn main() {}
