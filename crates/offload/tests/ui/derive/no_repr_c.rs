//! Host and device must agree on field offsets: `#[repr(C)]` (or
//! `#[repr(transparent)]`, see the second struct) is required.
#[derive(Clone, Copy, offload::DeviceCopy)]
struct Point {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(transparent)]
struct Meters(f64);

#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(align(8))]
struct Aligned {
    x: f32,
}

fn main() {}
