//! A kernel returns nothing; `-> ()` is accepted (see the last kernel).
#![allow(unused_variables)]
use offload::prelude::*;

#[kernel]
fn sum(x: &[f32]) -> f32 {
    x[0]
}

#[kernel]
fn unit(x: &mut [f32]) -> () {}

fn main() {}
