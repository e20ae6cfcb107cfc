//! `#[derive(DeviceCopy)]`. (Expanded by `src/expand_tests.rs`; not compiled.)

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Point {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(transparent)]
struct Meters(f64);

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, align(16))]
struct Pair<T, U: Copy>
where
    T: Copy,
{
    a: T,
    b: [U; 3],
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
struct Unit;

#[derive(Clone, Copy, DeviceCopy)]
struct NoRepr {
    x: u32,
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(u8)]
enum Tag {
    A,
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
union Bits {
    f: f32,
    u: u32,
}
