//! A device global is updated through atomics in kernels and `write()` on
//! the host, never as a `static mut`.
#[offload::device_global]
static mut COUNT: u32 = 0;

fn main() {}
