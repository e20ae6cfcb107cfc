//! A queue shared through an `Arc` is passed to a queued launch as `&*q`:
//! the error for `&q` says so.
use offload::prelude::*;
use std::sync::Arc;

#[kernel]
fn fill(v: u32, out: &mut [u32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

fn main() -> offload::Result<()> {
    let q = Arc::new(Queue::new()?);
    let mut d = DeviceBuffer::<u32>::zeroed(4)?;
    fill::on(&q, for_len(4), 7, &mut d)?;
    Ok(())
}
