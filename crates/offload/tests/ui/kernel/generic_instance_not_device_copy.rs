//! A generic kernel's parameters get the bounds their mapping needs, so an
//! instantiation that cannot exist on the device is an error at the call.
use offload::prelude::*;

#[kernel]
fn fill<T: Copy>(value: T, out: &mut [T]) {
    if let Some((_, o)) = out.at_thread() {
        *o = value;
    }
}

fn main() {
    let mut names = vec![""; 4];
    let _ = fill(LaunchConfig::for_len(4), "x", &mut names);
}
