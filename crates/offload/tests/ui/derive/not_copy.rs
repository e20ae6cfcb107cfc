//! `DeviceCopy` types are `Copy` (bytes copied to the device and back).
#[derive(offload::DeviceCopy)]
#[repr(C)]
struct Point {
    x: f32,
    y: f32,
}

fn main() {}
