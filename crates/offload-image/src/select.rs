//! Which image of a bundle runs on a device: the suffix rules of NVIDIA
//! architecture names and the selection rule [`select`].

use crate::format::{Image, ImageKind};

/// A GPU as the runtime sees it, for [`select`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// An NVIDIA GPU of compute capability `major.minor`.
    Cuda { major: u32, minor: u32 },
}

/// How far code built for an NVIDIA architecture carries, from its name's
/// suffix (CUDA C++ Programming Guide, "Compute Capabilities", feature
/// availability; PTX ISA, "Target ISA notes"; nvcc manual, "GPU
/// Architecture Naming").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArchSuffix {
    /// `sm_90`: the baseline feature set, kept by every later architecture.
    None,
    /// `sm_100f` (CUDA 12.9+): family-specific features, kept by the later
    /// architectures of the same family (same major version, minor at least
    /// this one's: `sm_100f` runs on 10.0 and 10.3, not on 12.0).
    Family,
    /// `sm_90a`: architecture-specific features, which exist on exactly this
    /// compute capability and no other (`sm_90a` runs on 9.0 only).
    Specific,
}

/// An NVIDIA architecture name, parsed: `sm_XY`, `sm_XYa`, `sm_XYf` (or
/// `compute_…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NvArch {
    /// Compute capability major version (`sm_90` → 9, `sm_100` → 10).
    pub major: u32,
    /// Compute capability minor version (the last digit).
    pub minor: u32,
    /// The `a` / `f` suffix.
    pub suffix: ArchSuffix,
}

impl NvArch {
    /// Parses `sm_XY[a|f]` / `compute_XY[a|f]`; `None` for anything else
    /// (e.g. `gfx90a`).
    pub fn parse(arch: &str) -> Option<NvArch> {
        let digits = arch.strip_prefix("sm_").or_else(|| arch.strip_prefix("compute_"))?;
        let (digits, suffix) = match digits.as_bytes().last() {
            Some(b'a') => (&digits[..digits.len() - 1], ArchSuffix::Specific),
            Some(b'f') => (&digits[..digits.len() - 1], ArchSuffix::Family),
            _ => (digits, ArchSuffix::None),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(NvArch { major: major.parse().ok()?, minor: minor.parse().ok()?, suffix })
    }

    /// Whether an image of `kind` built for this architecture runs on a GPU
    /// of compute capability `major.minor`:
    ///
    /// | | plain `sm_XY` | family `sm_XYf` | specific `sm_XYa` |
    /// | --- | --- | --- | --- |
    /// | PTX (JIT by the driver) | any GPU ≥ X.Y | same major X, minor ≥ Y | exactly X.Y |
    /// | cubin | same major X, minor ≥ Y | same major X, minor ≥ Y | exactly X.Y |
    ///
    /// (A cubin is binary-compatible only within its major version: CUDA C++
    /// Programming Guide, "Binary Compatibility"; PTX is forward-compatible:
    /// "PTX Compatibility". Family- and architecture-specific code gives up
    /// that forward compatibility as the table says.)
    pub fn runs_on(self, kind: ImageKind, major: u32, minor: u32) -> bool {
        let same_major_newer = self.major == major && self.minor <= minor;
        match (self.suffix, kind) {
            (ArchSuffix::Specific, _) => (self.major, self.minor) == (major, minor),
            (ArchSuffix::Family, _) | (ArchSuffix::None, ImageKind::Cubin) => same_major_newer,
            (ArchSuffix::None, _) => (self.major, self.minor) <= (major, minor),
        }
    }
}

/// Parses an NVIDIA architecture name `sm_XY` / `sm_XYa` / `sm_XYf` /
/// `compute_XY` into (major, minor), dropping the suffix; `sm_90` is
/// (9, 0), `sm_100` is (10, 0). Which GPUs an image runs on depends on the
/// suffix too: see [`NvArch::runs_on`].
pub fn parse_sm(arch: &str) -> Option<(u32, u32)> {
    NvArch::parse(arch).map(|a| (a.major, a.minor))
}

/// Chooses the image to load on `device`, or `None` if no image can run there.
///
/// The rule, for an NVIDIA GPU of compute capability X.Y, among the images
/// that run on it (see [`NvArch::runs_on`] for what runs where, by kind and
/// `a`/`f` suffix):
/// 1. a cubin, the one of the highest architecture (then `a` before `f`
///    before plain: the most specific code for the same architecture);
/// 2. otherwise a PTX, chosen the same way, compiled by the driver's JIT;
/// 3. otherwise nothing: every image targets another or a newer GPU.
pub fn select<'a>(images: &[Image<'a>], device: Device) -> Option<Image<'a>> {
    let Device::Cuda { major, minor } = device;
    let best = |kind: ImageKind| {
        images
            .iter()
            .filter(|i| i.kind == kind)
            .filter_map(|i| NvArch::parse(i.arch).map(|a| (a, i)))
            .filter(|(a, _)| a.runs_on(kind, major, minor))
            .max_by_key(|(a, _)| (a.major, a.minor, a.suffix))
            .map(|(_, img)| *img)
    };
    best(ImageKind::Cubin).or_else(|| best(ImageKind::Ptx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::sample;
    use crate::read::read_bundle;
    use crate::write::write_bundle;

    #[test]
    fn selection_rule() {
        let imgs = sample();
        let bytes = write_bundle(&imgs);
        let (read, _) = read_bundle(&bytes).unwrap();
        // sm_90 device: the sm_90 cubin
        let s = select(&read, Device::Cuda { major: 9, minor: 0 }).unwrap();
        assert_eq!((s.kind, s.arch), (ImageKind::Cubin, "sm_90"));
        // sm_100: cubin major differs, PTX sm_80 is JIT-compiled
        let s = select(&read, Device::Cuda { major: 10, minor: 0 }).unwrap();
        assert_eq!((s.kind, s.arch), (ImageKind::Ptx, "sm_80"));
        // sm_86: PTX sm_80
        let s = select(&read, Device::Cuda { major: 8, minor: 6 }).unwrap();
        assert_eq!(s.kind, ImageKind::Ptx);
        // sm_75: nothing can run
        assert!(select(&read, Device::Cuda { major: 7, minor: 5 }).is_none());
    }

    fn img(kind: ImageKind, arch: &'static str) -> Image<'static> {
        Image { kind, triple: "nvptx64-nvidia-cuda", arch, kernels: "", bytes: b"", checksum: None }
    }

    /// Which image `select` picks from `have` on compute capability `cc`;
    /// `None` if none runs there.
    fn pick(have: &[Image<'static>], cc: (u32, u32)) -> Option<(ImageKind, &'static str)> {
        select(have, Device::Cuda { major: cc.0, minor: cc.1 }).map(|i| (i.kind, i.arch))
    }

    #[test]
    fn arch_suffixes_limit_where_images_run() {
        use ImageKind::{Cubin, Ptx};
        // (images, device, expected choice), against the table on NvArch::runs_on.
        type Images = &'static [(ImageKind, &'static str)];
        type Choice = Option<(ImageKind, &'static str)>;
        let cases: &[(Images, (u32, u32), Choice)] = &[
            // Plain PTX is JIT-compiled forward, across major versions.
            (&[(Ptx, "sm_80")], (10, 0), Some((Ptx, "sm_80"))),
            (&[(Ptx, "sm_80")], (7, 5), None),
            // Architecture-specific PTX runs on exactly its architecture.
            (&[(Ptx, "sm_90a")], (9, 0), Some((Ptx, "sm_90a"))),
            (&[(Ptx, "sm_90a")], (10, 0), None),
            (&[(Ptx, "sm_90a")], (12, 0), None),
            (&[(Ptx, "sm_100a")], (10, 3), None),
            // ... so a plain PTX next to it is chosen on other GPUs.
            (&[(Ptx, "sm_90a"), (Ptx, "sm_80")], (10, 0), Some((Ptx, "sm_80"))),
            (&[(Ptx, "sm_90a"), (Ptx, "sm_80")], (9, 0), Some((Ptx, "sm_90a"))),
            // Family-specific PTX: same major, minor at least its own.
            (&[(Ptx, "sm_100f")], (10, 0), Some((Ptx, "sm_100f"))),
            (&[(Ptx, "sm_100f")], (10, 3), Some((Ptx, "sm_100f"))),
            (&[(Ptx, "sm_103f")], (10, 0), None),
            (&[(Ptx, "sm_100f")], (12, 0), None),
            (&[(Ptx, "sm_100f")], (9, 0), None),
            // Cubins: same major, minor at least their own; `a` exactly.
            (&[(Cubin, "sm_86")], (8, 9), Some((Cubin, "sm_86"))),
            (&[(Cubin, "sm_86")], (8, 0), None),
            (&[(Cubin, "sm_80")], (9, 0), None),
            (&[(Cubin, "sm_90a")], (9, 0), Some((Cubin, "sm_90a"))),
            (&[(Cubin, "sm_100a")], (10, 3), None),
            (&[(Cubin, "sm_100f")], (10, 3), Some((Cubin, "sm_100f"))),
            (&[(Cubin, "sm_100f")], (11, 0), None),
            // The most specific code for the same architecture wins.
            (&[(Cubin, "sm_90"), (Cubin, "sm_90a")], (9, 0), Some((Cubin, "sm_90a"))),
            (&[(Cubin, "sm_100"), (Cubin, "sm_100f")], (10, 0), Some((Cubin, "sm_100f"))),
            (&[(Cubin, "sm_100f"), (Cubin, "sm_100a")], (10, 0), Some((Cubin, "sm_100a"))),
            (&[(Cubin, "sm_100f"), (Cubin, "sm_100a")], (10, 3), Some((Cubin, "sm_100f"))),
            // A newer architecture beats a more specific older one.
            (&[(Cubin, "sm_100f"), (Cubin, "sm_103")], (10, 3), Some((Cubin, "sm_103"))),
            // A cubin beats PTX; an unusable cubin does not block the PTX.
            (&[(Ptx, "sm_90"), (Cubin, "sm_90")], (9, 0), Some((Cubin, "sm_90"))),
            (&[(Ptx, "sm_90"), (Cubin, "sm_90a")], (10, 0), Some((Ptx, "sm_90"))),
            // Names that are not NVIDIA architectures never run.
            (&[(Ptx, "gfx90a"), (Ptx, "sm_x")], (9, 0), None),
        ];
        for (have, cc, want) in cases {
            let images: Vec<Image<'static>> = have.iter().map(|&(k, a)| img(k, a)).collect();
            assert_eq!(pick(&images, *cc), *want, "images {have:?} on sm_{}{}", cc.0, cc.1);
        }
    }

    #[test]
    fn sm_names() {
        assert_eq!(NvArch::parse("sm_90a"), Some(NvArch { major: 9, minor: 0, suffix: ArchSuffix::Specific }));
        assert_eq!(NvArch::parse("sm_100f"), Some(NvArch { major: 10, minor: 0, suffix: ArchSuffix::Family }));
        assert_eq!(NvArch::parse("compute_86"), Some(NvArch { major: 8, minor: 6, suffix: ArchSuffix::None }));
        assert_eq!(NvArch::parse("sm_9a"), None);
        assert_eq!(NvArch::parse("sm_90af"), None);
        assert_eq!(parse_sm("sm_90"), Some((9, 0)));
        assert_eq!(parse_sm("sm_90a"), Some((9, 0)));
        assert_eq!(parse_sm("sm_100f"), Some((10, 0)));
        assert_eq!(parse_sm("sm_100"), Some((10, 0)));
        assert_eq!(parse_sm("compute_86"), Some((8, 6)));
        assert_eq!(parse_sm("gfx90a"), None);
        assert_eq!(parse_sm("sm_x"), None);
    }
}
