//! A kernel is a free function: not a method (pass the fields as arguments).
use offload::prelude::*;

#[derive(Clone, Copy)]
struct Scale(f32);

impl Scale {
    #[kernel]
    fn apply(&self, out: &mut [f32]) {}
}

fn main() {}
