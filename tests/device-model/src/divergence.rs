//! Host fallback only: barriers and warp collectives in divergent code are
//! reported instead of hanging (on a GPU they hang or misbehave, so this
//! check does not run there).

use offload::{kernel, sync_threads, thread_idx, warp};

/// Lanes 0-15 of each warp wait at the barrier, lanes 16-31 at a shuffle:
/// neither can complete.
#[kernel]
fn divergent_barrier(out: &mut [u32]) {
    if warp::lane_id() < 16 {
        sync_threads();
    } else {
        let _ = warp::shuffle_xor(1u32, 1);
    }
    if let Some((_, o)) = out.at_thread() {
        *o = 1;
    }
}

#[kernel]
fn divergent_shuffle(out: &mut [u32]) {
    let mut v = thread_idx().x;
    if warp::lane_id() < 16 {
        v = warp::shuffle_xor(v, 1);
    }
    if let Some((_, o)) = out.at_thread() {
        *o = v;
    }
}

/// Threads that return early count as arrived at `sync_threads`.
#[kernel]
fn early_return(out: &mut [u32]) {
    let t = thread_idx().x;
    if t >= 48 {
        return;
    }
    sync_threads();
    if let Some((_, o)) = out.at_thread() {
        *o = t + 1;
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let mut out = vec![0u32; 64];
    let cfg = || offload::LaunchConfig::new(1u32, 64u32);
    let e = divergent_barrier(cfg(), &mut out).err().ok_or("divergent barrier was not reported")?;
    let t = e.to_string();
    if !matches!(e, offload::Error::Divergence { .. }) || !t.contains("wait at sync_threads") {
        return Err(format!("divergent barrier: {t}"));
    }
    let e = divergent_shuffle(cfg(), &mut out).err().ok_or("divergent shuffle was not reported")?;
    let t2 = e.to_string();
    if !t2.contains("lanes 0-15 wait for it, lanes 16-31 have returned") {
        return Err(format!("divergent shuffle: {t2}"));
    }
    early_return(cfg(), &mut out).map_err(|e| e.to_string())?;
    if (0..48).any(|t| out[t] != t as u32 + 1) {
        return Err("early return: wrong values".into());
    }
    Ok(format!("reported: `{t2}`"))
}
