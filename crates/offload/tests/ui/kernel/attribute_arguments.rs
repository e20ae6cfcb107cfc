//! The attribute takes nothing or `same_len(a, b, …)`.
use offload::prelude::*;

#[kernel(same_length(a, b))]
fn other_word(a: &[f32], b: &mut [f32]) {}

#[kernel(same_len = 1)]
fn name_value(a: &[f32], b: &mut [f32]) {}

#[kernel(same_len(a + b))]
fn expression(a: &[f32], b: &mut [f32]) {}

#[kernel(fast)]
fn bare_word(a: &[f32], b: &mut [f32]) {}

fn main() {}
