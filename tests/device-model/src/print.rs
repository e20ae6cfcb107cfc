//! Formatted output from kernels.

use offload::{block_idx, kernel, thread_idx};

/// Threads 0 and 1 of every block print one line each.
#[kernel]
fn hello(scale: f32, marker: u32) {
    let (b, t) = (block_idx().x, thread_idx().x);
    if t < 2 {
        offload::println!("device-model print {marker}: block {b} thread {t} value {:.3} {:?}", scale * (t + 1) as f32, [b, t]);
    }
}

/// The lines `hello(2.5, marker)` prints with 3 blocks, sorted.
#[offload::host]
pub fn expected(marker: u32) -> Vec<String> {
    let mut v = Vec::new();
    for b in 0..3u32 {
        for t in 0..2u32 {
            v.push(format!("device-model print {marker}: block {b} thread {t} value {:.3} {:?}", 2.5 * (t + 1) as f32, [b, t]));
        }
    }
    v.sort();
    v
}

/// Launches the printing kernel; `tests/print.rs` checks the output, since
/// on the GPU it reaches stdout through the driver.
#[offload::host]
pub fn run(marker: u32) -> Result<String, String> {
    hello(offload::LaunchConfig::new(3u32, 64u32), 2.5, marker).map_err(|e| e.to_string())?;
    Ok(format!("printed {} lines (checked by the print test)", expected(marker).len()))
}
