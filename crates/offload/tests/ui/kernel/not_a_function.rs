//! `#[kernel]` applies to a free function only.
use offload::prelude::*;

#[kernel]
struct Params {
    n: u32,
}

fn main() {}
