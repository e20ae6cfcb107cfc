//! Whether one GPU can reach another's memory (`cuDeviceCanAccessPeer`,
//! CUDA Driver API, "Peer Context Memory Access"), asked of the devices
//! without starting them. A leaf: the device handles (`runtime::device`)
//! and the errors that name devices use it; enabling the access is
//! `peer`'s.

use std::sync::Mutex;
use std::vec::Vec;

use cudarc::driver::result;
use cudarc::driver::sys;

/// `cuDeviceCanAccessPeer` answers, `(a, b, yes)`, asked once per pair.
static ANSWERS: Mutex<Vec<(u32, u32, bool)>> = Mutex::new(Vec::new());

/// Whether GPU `a` can access the memory of GPU `b` (`cuDeviceCanAccessPeer`;
/// false where the driver cannot say).
pub(crate) fn can_access(a: u32, b: u32) -> bool {
    if a == b {
        return true;
    }
    let mut answers = ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, _, yes)) = answers.iter().find(|&&(x, y, _)| (x, y) == (a, b)) {
        return yes;
    }
    let ask = || -> Option<bool> {
        let (da, db) = (result::device::get(a as i32).ok()?, result::device::get(b as i32).ok()?);
        let mut yes: core::ffi::c_int = 0;
        // SAFETY: both handles came from `cuDeviceGet` after `cuInit` (the
        // devices were listed); writes one int.
        unsafe { sys::cuDeviceCanAccessPeer(&mut yes, da, db) }.result().ok()?;
        Some(yes != 0)
    };
    let yes = ask().unwrap_or(false);
    answers.push((a, b, yes));
    yes
}
