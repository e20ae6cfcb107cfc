//! Const generic parameters are not supported yet; type parameters are.
use offload::prelude::*;

#[kernel]
fn fill<const N: usize>(out: &mut [f32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = N as f32;
    }
}

fn main() {}
