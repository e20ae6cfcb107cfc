//! A by-value kernel parameter aligned to more than 16 bytes (here through
//! a field's type) is an error at the parameter, on the host pass as on the
//! device pass (where rustc's nvptx64 kernel ABI cannot pass it).
use offload::prelude::*;

#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(C, align(32))]
struct Wide {
    x: [f32; 8],
}

#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(C)]
struct HoldsWide {
    tag: u32,
    w: Wide,
}

#[kernel]
fn takes_wide(h: HoldsWide, out: &mut [f32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = h.w.x[0] + h.tag as f32;
    }
}

/// By reference it is fine.
#[kernel]
fn takes_wide_ref(h: &HoldsWide, out: &mut [f32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = h.w.x[0] + h.tag as f32;
    }
}

fn main() {}
