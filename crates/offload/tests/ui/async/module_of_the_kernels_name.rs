//! A kernel's queued form is a type of the kernel's name (an empty enum):
//! another item of that name in the type namespace of the same module
//! clashes (rename one).
use offload::prelude::*;

#[kernel]
fn fill(v: u32, y: &mut [u32]) {
    if let Some((_, yi)) = y.at_thread() {
        *yi = v;
    }
}

mod fill {}

fn main() {}
