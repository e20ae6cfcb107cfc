//! A graph takes `DeviceBuffer`s only: a `Vec` in a captured launch is a
//! compile error whose note says so (not only that a scope is needed).
use offload::prelude::*;

#[kernel]
fn fill(v: u32, out: &mut [u32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let mut v = vec![0u32; 4];
    let _graph = q.capture(|g| fill::on(g, for_len(4), 7, &mut v))?;
    Ok(())
}
