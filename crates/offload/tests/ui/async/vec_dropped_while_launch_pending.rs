//! A `Vec` borrowed by a queued launch in a scope cannot be dropped (freed)
//! before the scope ends.
use offload::prelude::*;

#[kernel]
fn fill(v: u32, y: &mut [u32]) {
    if let Some((_, yi)) = y.at_thread() {
        *yi = v;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let mut y = vec![0u32; 4];
    offload::scope(&q, |s| {
        fill::on(s, for_len(4), 7, &mut y)?;
        drop(y);
        Ok(())
    })?;
    Ok(())
}
