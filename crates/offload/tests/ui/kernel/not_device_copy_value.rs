//! A by-value parameter must be `DeviceCopy` (plain data with a fixed layout).
#![allow(unused_variables)]
use offload::prelude::*;

#[derive(Clone, Copy)]
struct Params {
    n: u32,
}

#[kernel]
fn by_value(p: Params, out: &mut [u32]) {}

fn main() {}
