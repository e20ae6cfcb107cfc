//! A `DisjointSlice` is one GPU thread's view: host-only code in a kernel
//! body cannot move it to another OS thread (there it would be used outside
//! the thread it was made for).
use offload::prelude::*;

#[kernel]
fn spawn_inside(out: &mut [u64]) {
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    std::thread::scope(|s| {
        s.spawn(move || {
            for (_, x) in out.grid_stride() {
                *x += 1;
            }
        });
    });
}

fn main() {}
