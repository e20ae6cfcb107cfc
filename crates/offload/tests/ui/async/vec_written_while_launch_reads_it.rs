//! A `Vec` read by a queued launch in a scope cannot be written in the
//! scope while the launch may still read it.
use offload::prelude::*;

#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let mut x = vec![1.0f32; 4];
    let mut y = DeviceBuffer::<f32>::zeroed(4)?;
    offload::scope(&q, |s| {
        saxpy::on(s, for_len(4), 3.0, &x, &mut y)?;
        x[0] = 5.0;
        Ok(())
    })?;
    Ok(())
}
