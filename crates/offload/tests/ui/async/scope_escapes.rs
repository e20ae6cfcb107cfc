//! The scope handle cannot leave the closure (it would outlive the wait at
//! the scope's end), as with `std::thread::scope`.
use offload::prelude::*;

fn main() -> offload::Result<()> {
    let q = Queue::new()?;
    let mut leaked = None;
    offload::scope(&q, |s| {
        leaked = Some(s);
        Ok(())
    })?;
    let _ = leaked;
    Ok(())
}
