//! Every field must be `DeviceCopy`: no references, pointers or heap.
#[derive(Clone, Copy, offload::DeviceCopy)]
#[repr(C)]
struct Named {
    id: u32,
    name: &'static str,
    next: *const Named,
}

fn main() {}
