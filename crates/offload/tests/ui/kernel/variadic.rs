//! A kernel has a fixed list of parameters (rustc also rejects C variadics
//! outside `unsafe extern "C"` functions).
use offload::prelude::*;

#[kernel]
fn sum(out: &mut [f32], _: ...) {}

fn main() {}
