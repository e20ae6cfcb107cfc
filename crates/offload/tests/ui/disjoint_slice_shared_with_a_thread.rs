//! Nor can another thread borrow it (`DisjointSlice` is not `Sync`).
use offload::prelude::*;

#[kernel]
fn shared_with_thread(out: &mut [u64]) {
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    std::thread::scope(|s| {
        s.spawn(|| out.owns(0));
    });
}

fn main() {}
