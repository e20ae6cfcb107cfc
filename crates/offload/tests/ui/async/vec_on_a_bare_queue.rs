//! Outside a scope, a queued launch takes only `DeviceBuffer`s: a `Vec`
//! would be free to change or drop as soon as `on` returns.
use offload::prelude::*;

#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let x = DeviceBuffer::<f32>::zeroed(4)?;
    let mut y = vec![2.0f32; 4];
    saxpy::on(&q, for_len(4), 3.0, &x, &mut y)?;
    let p = PinnedBuffer::<f32>::zeroed(4)?;
    let mut d = DeviceBuffer::<f32>::zeroed(4)?;
    saxpy::on(&q, for_len(4), 3.0, &p, &mut d)?;
    Ok(())
}
