//! Inside `offload::scope`, a `Vec` written by a queued launch stays
//! borrowed until the scope ends: reading it in the scope, while the launch
//! may still be writing it, does not compile.
use offload::prelude::*;

#[kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = a * x[i] + *yi;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let x = vec![1.0f32; 4];
    let mut y = vec![2.0f32; 4];
    offload::scope(&q, |s| {
        saxpy::on(s, for_len(4), 3.0, &x, &mut y)?;
        println!("{}", y[0]);
        Ok(())
    })?;
    Ok(())
}
