//! A union cannot be `DeviceCopy`.
#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(C)]
union Bits {
    f: f32,
    u: u32,
}

fn main() {}
