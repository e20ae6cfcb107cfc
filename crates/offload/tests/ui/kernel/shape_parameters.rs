//! `shape(name = (extents…))` names a `&mut [T]` parameter, and each extent
//! a by-value parameter or a literal, which every thread of a launch shares.
use offload::prelude::*;

#[kernel(shape(input = (w, h), out = (w, r), nope = (w, h)))]
fn wrong_kinds(input: &[f32], out: &mut [f32], w: u32, h: u32, r: &u32) {}

#[kernel(shape(out = (w, z)))]
fn unknown_extent(out: &mut [f32], w: u32) {}

#[kernel(shape(out = (w, h, d, e)))]
fn four_extents(out: &mut [f32], w: u32, h: u32) {}

#[kernel(shape(out = (w, h)), shape(out = (h, w)))]
fn twice(out: &mut [f32], w: u32, h: u32) {}

fn main() {}
