//! A kernel's `&T` parameter is host memory: outside a scope its queued
//! form does not compile.
use offload::prelude::*;

#[kernel]
fn add_ref(r: &f64, out: &mut [f64]) {
    if let Some((_, o)) = out.at_thread() {
        *o += *r;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let r = 1.0f64;
    let mut out = DeviceBuffer::<f64>::zeroed(4)?;
    add_ref::on(&q, for_len(4), &r, &mut out)?;
    Ok(())
}
