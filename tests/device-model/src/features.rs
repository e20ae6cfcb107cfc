//! Target features in device code: `cargo offload` enables the PTX ISA
//! version the architecture needs, so `cfg!(target_feature = "ptxNN")`
//! holds for every version up to it (sm_90: PTX ISA 7.8) and code gated on
//! it is compiled, not silently dropped.

use offload::kernel;

/// Marks a mask of target features (see [`expected`]).
const MARK: u32 = 0x5a5a_0000;

/// One bit per feature, as the device code was compiled (the host's own
/// features on the host fallback).
pub const fn compiled_mask() -> u32 {
    MARK | cfg!(target_feature = "ptx70") as u32
        | (cfg!(target_feature = "ptx71") as u32) << 1
        | (cfg!(target_feature = "ptx78") as u32) << 2
        | (cfg!(target_feature = "ptx80") as u32) << 3
        | (cfg!(target_feature = "sm_70") as u32) << 4
        | (cfg!(target_feature = "sm_80") as u32) << 5
        | (cfg!(target_feature = "sm_90") as u32) << 6
}

/// The mask of device code for sm_90 (`0x5a5a0077`, 1515847799 in its
/// PTX): PTX ISA 7.0, 7.1, 7.8 and sm_70, sm_80, sm_90; not PTX 8.0.
pub const SM_90: u32 = MARK | 0b111_0111;

#[kernel]
fn features(out: &mut [u32]) {
    if let Some((_, o)) = out.at_thread() {
        *o = compiled_mask();
    }
}

#[offload::host]
pub fn check() -> Result<String, String> {
    let mut out = vec![0u32; 1];
    features(offload::for_len(1), &mut out).map_err(|e| e.to_string())?;
    let backend = offload::backend().map_err(|e| e.to_string())?;
    if backend.kind == offload::BackendKind::Cuda {
        // The device-model image is built for sm_90 (`scripts/gpu.sh build device-model`).
        if out[0] != SM_90 {
            return Err(format!("device code's target features {:#x}, expected {SM_90:#x} (sm_90: ptx70..ptx78 on)", out[0]));
        }
        Ok(format!("device code compiled with ptx70..ptx78 and sm_90 on ({:#x})", out[0]))
    } else {
        if out[0] != compiled_mask() {
            return Err(format!("host fallback ran {:#x}, the host's own features are {:#x}", out[0], compiled_mask()));
        }
        Ok(format!("host features {:#x} (the GPU check needs a GPU)", out[0]))
    }
}
