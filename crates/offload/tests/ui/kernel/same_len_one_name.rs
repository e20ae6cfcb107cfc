//! `same_len` relates two or more slices.
use offload::prelude::*;

#[kernel(same_len(a))]
fn one(a: &[f32], b: &mut [f32]) {}

fn main() {}
