//! The macro generates the entry point and its ABI; the kernel declares none.
use offload::prelude::*;

#[kernel]
extern "C" fn zero(out: &mut [f32]) {}

fn main() {}
