//! Device globals (`#[offload::device_global]`, CUDA's `__device__`
//! variables): kernels see the device's copy, which keeps its value from
//! launch to launch; host code sees it only through `read()` and changes it
//! only through `write()`, on both backends.

use offload::atomic::{AtomicU32, Ordering::Relaxed};
use offload::{global_index, kernel};

/// Counts the inputs divisible by 3 (starts at 7: the initializer is the
/// device's first value).
#[offload::device_global]
static HITS: AtomicU32 = AtomicU32::new(7);

/// A table kernels read.
#[offload::device_global]
pub static TABLE: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

#[kernel]
fn count_and_look_up(x: &[u32], out: &mut [f32]) {
    let i = global_index();
    if i < x.len() && x[i] % 3 == 0 {
        HITS.with(|h| h.fetch_add(1, Relaxed));
    }
    if let Some((i, o)) = out.at_thread() {
        *o = TABLE.with(|t| t[i % 4]);
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let e = |e: offload::Error| e.to_string();
    // Only the first check of a process sees the initializer.
    let first = HITS.read().map_err(e)?.into_inner();
    let n = 10_000usize;
    let x: Vec<u32> = (0..n as u32).map(|k| k.wrapping_mul(2654435761) >> 7).collect();
    let div3 = x.iter().filter(|&&v| v % 3 == 0).count() as u32;
    let mut out = vec![0f32; n];
    HITS.write(AtomicU32::new(100)).map_err(e)?;
    count_and_look_up(offload::for_len(n), &x, &mut out).map_err(e)?;
    count_and_look_up(offload::for_len(n), &x, &mut out).map_err(e)?;
    let hits = HITS.read().map_err(e)?.into_inner();
    if hits != 100 + 2 * div3 {
        return Err(format!("HITS = {hits} after two launches, expected 100 + 2 x {div3}"));
    }
    if let Some(i) = (0..n).find(|&i| out[i] != [1.0, 2.0, 3.0, 4.0][i % 4]) {
        return Err(format!("out[{i}] = {} from the initial table", out[i]));
    }
    TABLE.write([-1.5, 0.0, 8.0, 1e9]).map_err(e)?;
    count_and_look_up(offload::for_len(n), &x, &mut out).map_err(e)?;
    if let Some(i) = (0..n).find(|&i| out[i] != [-1.5, 0.0, 8.0, 1e9][i % 4]) {
        return Err(format!("out[{i}] = {} after write()", out[i]));
    }
    if TABLE.read().map_err(e)? != [-1.5, 0.0, 8.0, 1e9] {
        return Err("TABLE.read() after write()".into());
    }
    // Host code has no other way to the device's copy.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outside = std::panic::catch_unwind(|| HITS.with(|h| h.load(Relaxed)));
    std::panic::set_hook(hook);
    if outside.is_ok() {
        return Err("HITS.with() outside a kernel did not panic".into());
    }
    TABLE.write([1.0, 2.0, 3.0, 4.0]).map_err(e)?;
    Ok(format!("first read {first}; {hits} = 100 + 2 x {div3} after two launches; table written and read back"))
}
