//! Only plain data and offload's atomics can be device globals.
#[offload::device_global]
static NAMES: &str = "no pointers on the device";

fn main() {}
