//! A kernel cannot call another kernel: on the host, the name is the other
//! kernel's launcher, whose first argument is a launch configuration.
use offload::prelude::*;

#[kernel]
fn scale(k: f32, v: &mut [f32]) {
    for (_, x) in v.grid_stride() {
        *x *= k;
    }
}

#[kernel]
fn twice(k: f32, v: &mut [f32]) {
    scale(k, v);
}

fn main() {}
