//! Mapped elements must be plain data too: the launcher takes `&[T]` and
//! `&mut [T]` only for such a `T`.
#![allow(unused_variables)]
use offload::prelude::*;

#[derive(Clone, Copy)]
struct Params {
    n: u32,
}

#[kernel]
fn read(p: &[Params], q: &Params) {}

#[kernel]
fn write(p: &mut [Params], q: &mut Params) {}

fn main() {}
