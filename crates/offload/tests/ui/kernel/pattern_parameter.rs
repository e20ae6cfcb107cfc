//! Each parameter is a plain name (the entry point names its pieces after
//! it); `_` and `mut x` are fine (see the last kernel).
#![allow(unused_variables)]
use offload::prelude::*;

#[kernel]
fn patterns((a, b): (f32, f32), ref c: u32, d @ _: u8, out: &mut [f32]) {}

#[kernel]
fn names(mut n: u32, _: f32, out: &mut [f32]) {
    n += 1;
    let _ = n;
}

fn main() {}
