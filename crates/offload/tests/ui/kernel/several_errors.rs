//! All of a kernel's errors come at once, in source order, each at its
//! token; the rest of the crate still resolves the kernel's name.
use offload::prelude::*;

#[kernel(same_len(a))]
async unsafe fn everything<T, const N: usize>(v: Vec<u8>, (a, b): (f32, f32), v__len: usize) -> f32 {
    0.0
}

fn main() {
    let _ = everything::<f32, 1>;
}
