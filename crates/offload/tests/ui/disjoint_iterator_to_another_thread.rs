//! Nor can its grid-stride iterator go to another thread.
use offload::prelude::*;

#[kernel]
fn iterator_to_thread(out: &mut [u64]) {
    let elements = out.grid_stride();
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    std::thread::scope(|s| {
        s.spawn(move || {
            for (_, x) in elements {
                *x += 1;
            }
        });
    });
}

fn main() {}
