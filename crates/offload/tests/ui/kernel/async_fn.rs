//! A kernel cannot be `async`: its launcher returns when the kernel is done.
use offload::prelude::*;

#[kernel]
async fn zero(out: &mut [f32]) {}

fn main() {}
