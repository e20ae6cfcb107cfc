//! `#[device_global]` applies to a `static`.
#[offload::device_global]
const LIMIT: u32 = 16;

fn main() {}
