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

/// Elements of `BIG`: 1 MiB, more than the 64 KiB stack the check copies
/// it on, so it must go through memory the caller owns.
const BIG_LEN: usize = 1 << 17;

/// A large table kernels read.
#[offload::device_global]
static BIG: [u64; BIG_LEN] = [0; BIG_LEN];

/// `out[i] = BIG[(i * 4099) % BIG_LEN]`.
#[kernel]
fn big_look_up(out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = BIG.with(|t| t[(i * 4099) % BIG_LEN]);
    }
}

/// `BIG` written from and read into heap memory by a thread with a 64 KiB
/// stack (`read()` / `write(v)` would put the 1 MiB value on it); a kernel
/// sees what was written, and the copy read back is what was written.
#[offload::host]
fn check_big() -> Result<(), String> {
    let e = |e: offload::Error| e.to_string();
    let pattern = |k: u64| (0..BIG_LEN as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k).collect::<Vec<u64>>();
    let small_stack = std::thread::Builder::new().stack_size(64 * 1024);
    small_stack
        .spawn(move || -> Result<(), String> {
            let table: Box<[u64; BIG_LEN]> = pattern(5).try_into().map_err(|_| "length")?;
            BIG.write_from(&table).map_err(e)?;
            let mut back: Box<[u64; BIG_LEN]> = vec![0; BIG_LEN].try_into().map_err(|_| "length")?;
            BIG.read_into(&mut back).map_err(e)?;
            if back != table {
                return Err("BIG.read_into() after write_from() differs".into());
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|_| "the 64 KiB-stack thread panicked (a DeviceGlobal copy on its stack?)")??;
    let n = 10_000usize;
    let mut out = vec![0u64; n];
    big_look_up(offload::for_len(n), &mut out).map_err(e)?;
    let want = pattern(5);
    if let Some(i) = (0..n).find(|&i| out[i] != want[(i * 4099) % BIG_LEN]) {
        return Err(format!("big_look_up: out[{i}] = {:#x}, expected {:#x}", out[i], want[(i * 4099) % BIG_LEN]));
    }
    Ok(())
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
    check_big()?;
    Ok(format!(
        "first read {first}; {hits} = 100 + 2 x {div3} after two launches; table written and read back; 1 MiB table \
         through read_into/write_from"
    ))
}
