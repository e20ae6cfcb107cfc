//! Not every bit pattern is a valid enum value, so an enum cannot come back
//! from the device: pass a `u32` tag instead.
#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(u32)]
enum Op {
    Add,
    Mul,
}

fn main() {}
