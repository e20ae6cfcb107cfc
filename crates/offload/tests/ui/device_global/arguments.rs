//! `#[device_global]` takes no arguments.
#[offload::device_global(shared)]
static COUNT: u32 = 0;

fn main() {}
