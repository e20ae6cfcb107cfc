//! What the CUDA driver says about the GPUs before any of them starts:
//! [`enumerate`] (names, compute capabilities, memory; no context is
//! made), and [`choose_image`], the image a GPU of one architecture loads
//! from this binary's bundle, so that GPUs of different architectures in
//! one process (an sm_80 and an sm_90) each get their own.

use std::format;
use std::string::String;
use std::vec::Vec;

use cudarc::driver::result;
use cudarc::driver::sys;
use offload_image::Image;

use super::error::driver_error;
use crate::runtime::error::Error;

/// One GPU, as the driver describes it without a context.
#[derive(Debug, Clone)]
pub(crate) struct Gpu {
    /// `cuDeviceGet`'s ordinal.
    pub(crate) ordinal: u32,
    /// `cuDeviceGetName`.
    pub(crate) name: String,
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` / `_MINOR`.
    pub(crate) major: u32,
    pub(crate) minor: u32,
    /// `cuDeviceTotalMem`, bytes.
    pub(crate) memory: u64,
}

/// `cuDeviceGetAttribute(a, dev)`.
pub(super) fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> core::result::Result<i32, Unusable> {
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    unsafe { result::device::get_attribute(dev, a) }
        .map_err(|e| Unusable::Failed(driver_error("cuDeviceGetAttribute", None, e)))
}

/// `cuDeviceGet(ordinal)`.
pub(super) fn device(ordinal: u32) -> core::result::Result<sys::CUdevice, Unusable> {
    result::device::get(ordinal as i32).map_err(|e| Unusable::Failed(driver_error("cuDeviceGet", None, e)))
}

/// The GPUs the driver reports, by ordinal (`CUDA_VISIBLE_DEVICES` hides
/// and orders them). Loads the driver (`dlopen`) and calls `cuInit` first.
///
/// # Errors
/// [`Unusable::NoDriver`] without `libcuda.so`, [`Unusable::NoGpu`] if the
/// driver reports none (`CUDA_ERROR_NO_DEVICE`, or a count of 0), else the
/// failing call.
pub(crate) fn enumerate() -> core::result::Result<Vec<Gpu>, Unusable> {
    // SAFETY: only tries to `dlopen` the driver library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Unusable::NoDriver);
    }
    if let Err(e) = result::init() {
        return Err(if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            Unusable::NoGpu
        } else {
            Unusable::Failed(driver_error("cuInit", None, e))
        });
    }
    let count = result::device::get_count().map_err(|e| Unusable::Failed(driver_error("cuDeviceGetCount", None, e)))?;
    if count <= 0 {
        return Err(Unusable::NoGpu);
    }
    (0..count as u32).map(describe).collect()
}

fn describe(ordinal: u32) -> core::result::Result<Gpu, Unusable> {
    let dev = device(ordinal)?;
    let major = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor = attr(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    let name = result::device::get_name(dev).unwrap_or_else(|_| "CUDA GPU".into());
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    let memory = unsafe { result::device::total_mem(dev) }.unwrap_or(0) as u64;
    Ok(Gpu { ordinal, name, major, minor, memory })
}

/// The image of `all` (this binary's intact images) that a GPU of compute
/// capability `major.minor` loads, by `offload_image::select`'s rule (its
/// own cubin, else the newest PTX it can JIT-compile). `device` names the
/// GPU in the error; `skipped` says how many corrupted images were left
/// out.
///
/// # Errors
/// [`Error::NoImage`] if none runs on it, saying what the binary carries
/// and which `--arch` to build for.
pub(crate) fn choose_image(
    all: &[Image<'static>],
    major: u32,
    minor: u32,
    device: &str,
    skipped: &str,
) -> Result<Image<'static>, Error> {
    offload_image::select(all, offload_image::Device::Cuda { major, minor }).ok_or_else(|| {
        let have: Vec<String> = all.iter().map(|i| format!("{} for {}", i.kind, i.arch)).collect();
        Error::from(crate::error::NoImage {
            device: device.into(),
            reason: format!(
                "the binary carries {}{skipped}, none of which runs on sm_{major}{minor}; rebuild with `cargo offload \
                 build --arch sm_{major}{minor}` (several `--arch` for GPUs of several architectures)",
                have.join(", ")
            ),
        })
    })
}

/// Why the CUDA backend could not start.
#[derive(Debug)]
pub(crate) enum Unusable {
    NoDriver,
    NoGpu,
    Failed(Error),
}

impl Unusable {
    /// The error of a device that was asked for and cannot start.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Unusable::Failed(e) => e,
            other => Error::NoDevice { reason: other.reason().into() },
        }
    }

    pub(crate) fn reason(&self) -> String {
        match self {
            Unusable::NoDriver => "no CUDA driver (libcuda.so was not found)".into(),
            Unusable::NoGpu => "the CUDA driver reports no GPU".into(),
            Unusable::Failed(e) => std::format!("{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_image::ImageKind;

    fn image(kind: ImageKind, arch: &'static str) -> Image<'static> {
        Image { kind, triple: "nvptx64-nvidia-cuda", arch, kernels: "", bytes: b"image", checksum: None }
    }

    /// One bundle, two GPUs: each gets the image of its own architecture,
    /// so an sm_80 and an sm_90 run side by side in one process.
    #[test]
    fn each_architecture_gets_its_own_image() {
        let all = [image(ImageKind::Cubin, "sm_80"), image(ImageKind::Cubin, "sm_90"), image(ImageKind::Ptx, "sm_80")];
        let a100 = choose_image(&all, 8, 0, "A100 (sm_80)", "").unwrap();
        let h200 = choose_image(&all, 9, 0, "H200 (sm_90)", "").unwrap();
        assert_eq!((a100.kind, a100.arch), (ImageKind::Cubin, "sm_80"));
        assert_eq!((h200.kind, h200.arch), (ImageKind::Cubin, "sm_90"));
        // An sm_86 runs the sm_80 cubin (same major, higher minor); an sm_100
        // none of the cubins: the PTX for sm_80, JIT-compiled by the driver.
        let a40 = choose_image(&all, 8, 6, "A40 (sm_86)", "").unwrap();
        assert_eq!((a40.kind, a40.arch), (ImageKind::Cubin, "sm_80"));
        let b200 = choose_image(&all, 10, 0, "B200 (sm_100)", "").unwrap();
        assert_eq!((b200.kind, b200.arch), (ImageKind::Ptx, "sm_80"));
        // A V100 runs none of them.
        let e = choose_image(&all, 7, 0, "V100 (sm_70)", "").unwrap_err();
        let msg = format!("{e}");
        assert!(msg.starts_with("no device image for V100 (sm_70): the binary carries cubin for sm_80"), "{msg}");
        assert!(msg.contains("cargo offload build --arch sm_70"), "{msg}");
    }
}
