//! A kernel cannot `.await`, with or without barriers: the host runs a body
//! with barriers as an `async fn`, where an `.await` would otherwise compile
//! (and could wait forever); the device rejects it (E0728).
use offload::prelude::*;
use offload::sync_threads;

#[kernel]
fn waits(out: &mut [u32]) {
    sync_threads();
    let v = core::future::ready(1u32).await;
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

fn main() {}
