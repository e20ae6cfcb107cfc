//! Memory made inside the scope's closure is freed when the closure
//! returns, before the scope has waited for the launch: it cannot be
//! passed.
use offload::prelude::*;

#[kernel]
fn fill(v: u32, y: &mut [u32]) {
    if let Some((_, yi)) = y.at_thread() {
        *yi = v;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    offload::scope(&q, |s| {
        let mut y = vec![0u32; 4];
        fill::on(s, for_len(4), 7, &mut y)?;
        Ok(())
    })?;
    Ok(())
}
