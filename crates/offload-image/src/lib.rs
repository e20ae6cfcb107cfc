//! The device-image container that `cargo offload` embeds in a host binary.
//!
//! One final binary (bin, test, example, bench) carries one *bundle*: a small
//! versioned header followed by a table of images of the same kernels, each
//! for one device kind and architecture (PTX for `sm_80`, a cubin for `sm_90`,
//! an AMD GPU code object for `gfx90a`, ...). The runtime picks one image for
//! the device it finds (see [`select`]). The shape follows LLVM's
//! `OffloadBinary` (`llvm/include/llvm/Object/OffloadBinary.h`): a fixed
//! header, fixed-size entries, strings and payloads addressed by offset.
//!
//! # Layout
//!
//! All integers are little-endian; every offset is in bytes from the start of
//! the bundle; the bundle's total size is a multiple of 8 so that bundles can
//! be concatenated in one linker section without padding.
//!
//! ```text
//! struct Header {            // 32 bytes
//!     magic:   [u8; 8],      // b"OFLDIMG\0"
//!     version: u32,          // FORMAT_VERSION (2)
//!     count:   u32,          // number of Entry records that follow
//!     size:    u64,          // total bundle size in bytes, header included
//!     reserved: u64,         // 0
//! }
//! struct Entry {             // 56 bytes, `count` of them right after the header
//!     kind:    u32,          // ImageKind: 1 = PTX, 2 = cubin, 3 = AMD GPU code object
//!     flags:   u32,          // 0
//!     triple:  (u32, u32),   // (offset, len) of the UTF-8 target triple
//!     arch:    (u32, u32),   // (offset, len) of the UTF-8 architecture, e.g. "sm_90"
//!     kernels: (u32, u32),   // (offset, len) of '\n'-separated kernel symbols
//!     image:   (u64, u64),   // (offset, len) of the image bytes
//!     checksum: u32,         // CRC-32 of the entry's contents (see below)
//!     reserved: u32,         // 0
//! }
//! // then strings and image payloads, in any order, each 8-byte aligned
//! ```
//!
//! `checksum` is the CRC-32 (ISO-HDLC, the zlib/PNG polynomial, as
//! `crc32fast` computes it) of, in this order: `kind` and `flags` as
//! little-endian `u32`s, then the bytes of the triple, the architecture, the
//! kernel list and the image. A damaged image (a flipped bit in a cubin would
//! otherwise reach the CUDA driver, which may crash on it) is found by
//! [`Image::verify`] before anything uses it.
//!
//! Version 1 (written by earlier `cargo offload`s) has 48-byte entries with no
//! `checksum` and `reserved`; it is still read, with [`Image::checksum`]
//! `None`.
#![forbid(unsafe_code)]

use std::fmt;

/// The magic bytes a bundle starts with.
pub const MAGIC: [u8; 8] = *b"OFLDIMG\0";
/// The layout version this crate writes (it also reads version 1).
pub const FORMAT_VERSION: u32 = 2;
/// Size in bytes of [`Header`](self#layout).
pub const HEADER_SIZE: usize = 32;
/// Size in bytes of one entry record (version 2).
pub const ENTRY_SIZE: usize = 56;
/// Size in bytes of one entry record of version 1, which has no checksum.
pub const ENTRY_SIZE_V1: usize = 48;
/// Name of the linker section that holds bundles in an ELF host binary.
pub const SECTION_NAME: &str = "offload_images";

/// What an image holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX assembly text; the CUDA driver compiles it for the GPU at load time
    /// (JIT), so it runs on any GPU whose SM version is at least `arch`.
    Ptx,
    /// A cubin (CUDA ELF with SASS) for exactly one SM major version: it runs on
    /// `sm_XY` GPUs with the same X and a minor version >= Y (CUDA C
    /// Programming Guide, "Binary Compatibility").
    Cubin,
    /// An AMD GPU code object (HSA ELF) for one `gfx` architecture.
    AmdgpuElf,
}

impl ImageKind {
    fn code(self) -> u32 {
        match self {
            ImageKind::Ptx => 1,
            ImageKind::Cubin => 2,
            ImageKind::AmdgpuElf => 3,
        }
    }

    fn from_code(code: u32) -> Option<Self> {
        match code {
            1 => Some(ImageKind::Ptx),
            2 => Some(ImageKind::Cubin),
            3 => Some(ImageKind::AmdgpuElf),
            _ => None,
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageKind::Ptx => "PTX",
            ImageKind::Cubin => "cubin",
            ImageKind::AmdgpuElf => "AMD GPU code object",
        })
    }
}

/// One image of a bundle, borrowed from the bundle's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image<'a> {
    pub kind: ImageKind,
    /// Target triple, e.g. `nvptx64-nvidia-cuda`.
    pub triple: &'a str,
    /// Architecture, e.g. `sm_90` or `gfx90a`.
    pub arch: &'a str,
    /// Kernel symbols defined by the image, '\n'-separated.
    pub kernels: &'a str,
    /// The image itself (PTX text, cubin or code object bytes).
    pub bytes: &'a [u8],
    /// The CRC-32 the bundle stores for this entry (see the
    /// [layout](self#layout)); `None` in a version 1 bundle.
    pub checksum: Option<u32>,
}

impl<'a> Image<'a> {
    /// The kernel entry symbols of this image.
    pub fn kernel_names(&self) -> impl Iterator<Item = &'a str> {
        self.kernels.split('\n').filter(|s| !s.is_empty())
    }

    /// Checks the entry against its stored checksum. Images of a version 1
    /// bundle, which has none, pass.
    ///
    /// # Errors
    /// [`Corrupted`] with both checksums if the contents changed after
    /// `cargo offload` wrote them.
    pub fn verify(&self) -> Result<(), Corrupted> {
        let Some(stored) = self.checksum else { return Ok(()) };
        let computed = entry_checksum(self.kind, 0, self.triple, self.arch, self.kernels, self.bytes);
        if computed == stored {
            Ok(())
        } else {
            Err(Corrupted { kind: self.kind, arch: self.arch.to_string(), stored, computed })
        }
    }
}

/// An image whose contents do not match the checksum stored for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupted {
    /// The image's kind.
    pub kind: ImageKind,
    /// The image's architecture as stored (itself possibly damaged).
    pub arch: String,
    /// The checksum in the bundle.
    pub stored: u32,
    /// The checksum of the contents found.
    pub computed: u32,
}

impl fmt::Display for Corrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the embedded {} {} image is corrupted (CRC-32 {:08x}, stored {:08x}): the binary was changed after `cargo offload` built it",
            self.arch, self.kind, self.computed, self.stored
        )
    }
}

impl std::error::Error for Corrupted {}

/// The checksum of one entry (see the [layout](self#layout)).
fn entry_checksum(kind: ImageKind, flags: u32, triple: &str, arch: &str, kernels: &str, image: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&kind.code().to_le_bytes());
    h.update(&flags.to_le_bytes());
    h.update(triple.as_bytes());
    h.update(arch.as_bytes());
    h.update(kernels.as_bytes());
    h.update(image);
    h.finalize()
}

/// An image to be written into a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedImage {
    pub kind: ImageKind,
    pub triple: String,
    pub arch: String,
    pub kernels: Vec<String>,
    pub bytes: Vec<u8>,
}

/// Why a byte string is not a valid bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// Fewer bytes than the header or an entry says there are.
    Truncated { needed: usize, have: usize },
    /// The bundle does not start with [`MAGIC`].
    BadMagic,
    /// The bundle's format version is neither 1 nor [`FORMAT_VERSION`]
    /// (a newer `cargo offload`, or a damaged header).
    UnsupportedVersion(u32),
    /// An entry's kind code is unknown.
    UnknownKind(u32),
    /// An entry points outside the bundle.
    OutOfBounds { entry: usize, field: &'static str },
    /// A string field is not UTF-8.
    NotUtf8 { entry: usize, field: &'static str },
    /// The bundle's size field is not a multiple of 8 or smaller than its table.
    BadSize(u64),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Truncated { needed, have } => {
                write!(f, "device image bundle is truncated: needs {needed} bytes, has {have}")
            }
            FormatError::BadMagic => f.write_str("not a device image bundle (bad magic bytes)"),
            FormatError::UnsupportedVersion(v) => write!(
                f,
                "device image bundle has format version {v}, this runtime reads versions 1 to {FORMAT_VERSION}; rebuild with the same `cargo offload` as the `offload` crate"
            ),
            FormatError::UnknownKind(k) => write!(f, "device image has unknown kind code {k}"),
            FormatError::OutOfBounds { entry, field } => {
                write!(f, "device image entry {entry}: field `{field}` points outside the bundle")
            }
            FormatError::NotUtf8 { entry, field } => {
                write!(f, "device image entry {entry}: field `{field}` is not UTF-8")
            }
            FormatError::BadSize(s) => write!(f, "device image bundle has an invalid size {s}"),
        }
    }
}

impl std::error::Error for FormatError {}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// Serializes images into one bundle (see the [layout](self#layout)).
pub fn write_bundle(images: &[OwnedImage]) -> Vec<u8> {
    let table_end = HEADER_SIZE + ENTRY_SIZE * images.len();
    let mut out = vec![0u8; table_end];
    let mut entries = Vec::with_capacity(images.len());
    let push = |out: &mut Vec<u8>, data: &[u8]| -> (usize, usize) {
        let off = out.len();
        out.extend_from_slice(data);
        out.resize(align8(out.len()), 0);
        (off, data.len())
    };
    for image in images {
        let triple = push(&mut out, image.triple.as_bytes());
        let arch = push(&mut out, image.arch.as_bytes());
        let kernel_list = image.kernels.join("\n");
        let kernels = push(&mut out, kernel_list.as_bytes());
        let bytes = push(&mut out, &image.bytes);
        let checksum = entry_checksum(image.kind, 0, &image.triple, &image.arch, &kernel_list, &image.bytes);
        entries.push((image.kind, triple, arch, kernels, bytes, checksum));
    }
    let size = out.len() as u64;
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&(images.len() as u32).to_le_bytes());
    out[16..24].copy_from_slice(&size.to_le_bytes());
    for (i, (kind, triple, arch, kernels, bytes, checksum)) in entries.into_iter().enumerate() {
        let e = &mut out[HEADER_SIZE + i * ENTRY_SIZE..HEADER_SIZE + (i + 1) * ENTRY_SIZE];
        e[0..4].copy_from_slice(&kind.code().to_le_bytes());
        let mut put32 = |at: usize, (off, len): (usize, usize)| {
            e[at..at + 4].copy_from_slice(&(off as u32).to_le_bytes());
            e[at + 4..at + 8].copy_from_slice(&(len as u32).to_le_bytes());
        };
        put32(8, triple);
        put32(16, arch);
        put32(24, kernels);
        e[32..40].copy_from_slice(&(bytes.0 as u64).to_le_bytes());
        e[40..48].copy_from_slice(&(bytes.1 as u64).to_le_bytes());
        e[48..52].copy_from_slice(&checksum.to_le_bytes());
    }
    out
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads one bundle (format version 1 or 2) from the start of `bytes`;
/// returns its images and its size. Every offset and length is checked
/// against the bundle; the images' checksums are not (see [`Image::verify`]).
pub fn read_bundle(bytes: &[u8]) -> Result<(Vec<Image<'_>>, usize), FormatError> {
    if bytes.len() < HEADER_SIZE {
        return Err(FormatError::Truncated { needed: HEADER_SIZE, have: bytes.len() });
    }
    if bytes[0..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let version = u32_at(bytes, 8);
    let entry_size = match version {
        1 => ENTRY_SIZE_V1,
        FORMAT_VERSION => ENTRY_SIZE,
        _ => return Err(FormatError::UnsupportedVersion(version)),
    };
    let count = u32_at(bytes, 12) as usize;
    let size64 = u64_at(bytes, 16);
    let table_end = HEADER_SIZE.saturating_add(count.saturating_mul(entry_size));
    if !size64.is_multiple_of(8) || size64 < table_end as u64 {
        return Err(FormatError::BadSize(size64));
    }
    let size = usize::try_from(size64).map_err(|_| FormatError::BadSize(size64))?;
    if bytes.len() < size {
        return Err(FormatError::Truncated { needed: size, have: bytes.len() });
    }
    let bundle = &bytes[..size];
    let mut images = Vec::with_capacity(count);
    for i in 0..count {
        let e = &bundle[HEADER_SIZE + i * entry_size..HEADER_SIZE + (i + 1) * entry_size];
        let code = u32_at(e, 0);
        let kind = ImageKind::from_code(code).ok_or(FormatError::UnknownKind(code))?;
        let range = |field: &'static str, off: u64, len: u64| -> Result<&[u8], FormatError> {
            let end = off.checked_add(len).filter(|&end| end <= size as u64);
            match end {
                Some(end) => Ok(&bundle[off as usize..end as usize]),
                None => Err(FormatError::OutOfBounds { entry: i, field }),
            }
        };
        let string = |field: &'static str, at: usize| -> Result<&str, FormatError> {
            let raw = range(field, u32_at(e, at) as u64, u32_at(e, at + 4) as u64)?;
            std::str::from_utf8(raw).map_err(|_| FormatError::NotUtf8 { entry: i, field })
        };
        images.push(Image {
            kind,
            triple: string("triple", 8)?,
            arch: string("arch", 16)?,
            kernels: string("kernels", 24)?,
            bytes: range("image", u64_at(e, 32), u64_at(e, 40))?,
            checksum: (version >= 2).then(|| u32_at(e, 48)),
        });
    }
    Ok((images, size))
}

/// Reads every bundle in a linker section that holds several bundles back to
/// back (one per object file that contributed one). Zero bytes between
/// bundles (alignment padding a linker may insert) are skipped.
pub fn read_section(mut bytes: &[u8]) -> Result<Vec<Image<'_>>, FormatError> {
    let mut all = Vec::new();
    loop {
        while bytes.len() >= 8 && bytes[..8] == [0; 8] {
            bytes = &bytes[8..];
        }
        if bytes.iter().all(|&b| b == 0) {
            return Ok(all);
        }
        let (images, size) = read_bundle(bytes)?;
        all.extend(images);
        bytes = &bytes[size..];
    }
}

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

/// Lists the kernel entry names in PTX text: every `.entry NAME(` directive.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in ptx.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == ".entry" {
                if let Some(name) = words.next() {
                    let name = name.split('(').next().unwrap_or(name);
                    if !name.is_empty() {
                        names.push(name.to_string());
                    }
                }
                break;
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<OwnedImage> {
        vec![
            OwnedImage {
                kind: ImageKind::Ptx,
                triple: "nvptx64-nvidia-cuda".into(),
                arch: "sm_80".into(),
                kernels: vec!["k_a".into(), "k_b".into()],
                bytes: b".version 7.8\n".to_vec(),
            },
            OwnedImage {
                kind: ImageKind::Cubin,
                triple: "nvptx64-nvidia-cuda".into(),
                arch: "sm_90".into(),
                kernels: vec!["k_a".into(), "k_b".into()],
                bytes: vec![0x7f, b'E', b'L', b'F', 1, 2, 3],
            },
        ]
    }

    #[test]
    fn round_trip() {
        let imgs = sample();
        let bytes = write_bundle(&imgs);
        assert_eq!(bytes.len() % 8, 0);
        let (read, size) = read_bundle(&bytes).unwrap();
        assert_eq!(size, bytes.len());
        assert_eq!(read.len(), 2);
        for (r, w) in read.iter().zip(&imgs) {
            assert_eq!(r.kind, w.kind);
            assert_eq!(r.triple, w.triple);
            assert_eq!(r.arch, w.arch);
            assert_eq!(r.kernel_names().collect::<Vec<_>>(), w.kernels);
            assert_eq!(r.bytes, &w.bytes[..]);
            assert!(r.checksum.is_some());
            assert_eq!(r.verify(), Ok(()));
        }
    }

    #[test]
    fn golden_bytes() {
        let img = OwnedImage {
            kind: ImageKind::Ptx,
            triple: "t".into(),
            arch: "sm_90".into(),
            kernels: vec!["k".into()],
            bytes: b"PTX".to_vec(),
        };
        let bytes = write_bundle(&[img]);
        // The checksum, computed independently: CRC-32 (zlib's) of
        // kind 1 and flags 0 as u32 LE, then "t", "sm_90", "k", "PTX".
        let crc = crc32fast::hash(b"\x01\0\0\0\0\0\0\0tsm_90kPTX");
        assert_eq!(crc, 0x991e_7ead, "CRC-32 of the golden entry (Python: zlib.crc32)");
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            // header: magic, version 2, count 1, size 120, reserved
            b"OFLDIMG\0".as_slice(), &[2, 0, 0, 0], &[1, 0, 0, 0], &[120, 0, 0, 0, 0, 0, 0, 0], &[0; 8],
            // entry: kind 1, flags 0
            &[1, 0, 0, 0], &[0, 0, 0, 0],
            &[88, 0, 0, 0, 1, 0, 0, 0],   // triple at 88, len 1
            &[96, 0, 0, 0, 5, 0, 0, 0],   // arch at 96, len 5
            &[104, 0, 0, 0, 1, 0, 0, 0],  // kernels at 104, len 1
            &[112, 0, 0, 0, 0, 0, 0, 0], &[3, 0, 0, 0, 0, 0, 0, 0], // image at 112, len 3
            &crc.to_le_bytes(), &[0, 0, 0, 0], // checksum, reserved
            b"t\0\0\0\0\0\0\0", b"sm_90\0\0\0", b"k\0\0\0\0\0\0\0", b"PTX\0\0\0\0\0",
        ].concat();
        assert_eq!(bytes, expected);
    }

    /// A bundle of version 1 (no checksums), as earlier `cargo offload`s
    /// wrote it, is still read; its images pass `verify`.
    #[test]
    fn version_1_bundles_are_read() {
        #[rustfmt::skip]
        let v1: Vec<u8> = [
            b"OFLDIMG\0".as_slice(), &[1, 0, 0, 0], &[1, 0, 0, 0], &[112, 0, 0, 0, 0, 0, 0, 0], &[0; 8],
            &[2, 0, 0, 0], &[0, 0, 0, 0],
            &[80, 0, 0, 0, 1, 0, 0, 0], &[88, 0, 0, 0, 5, 0, 0, 0], &[96, 0, 0, 0, 1, 0, 0, 0],
            &[104, 0, 0, 0, 0, 0, 0, 0], &[3, 0, 0, 0, 0, 0, 0, 0],
            b"t\0\0\0\0\0\0\0", b"sm_90\0\0\0", b"k\0\0\0\0\0\0\0", b"ELF\0\0\0\0\0",
        ].concat();
        let (imgs, size) = read_bundle(&v1).unwrap();
        assert_eq!(size, 112);
        assert_eq!(imgs.len(), 1);
        let i = imgs[0];
        assert_eq!((i.kind, i.triple, i.arch, i.kernels, i.bytes, i.checksum), (ImageKind::Cubin, "t", "sm_90", "k", &b"ELF"[..], None));
        assert_eq!(i.verify(), Ok(()));
    }

    /// Any changed byte of an entry's contents (strings or image) fails
    /// `verify`, naming the image; the other entries stay intact.
    #[test]
    fn corrupted_entries_are_detected() {
        let imgs = sample();
        let bytes = write_bundle(&imgs);
        let (read, _) = read_bundle(&bytes).unwrap();
        // Every byte of each payload region, flipped in turn.
        let regions: Vec<(usize, usize, usize)> = read
            .iter()
            .enumerate()
            .flat_map(|(n, i)| {
                [i.triple.as_bytes(), i.arch.as_bytes(), i.kernels.as_bytes(), i.bytes]
                    .map(|r| (n, r.as_ptr() as usize - bytes.as_ptr() as usize, r.len()))
            })
            .collect();
        for (entry, start, len) in regions {
            for at in start..start + len {
                let mut bad = bytes.clone();
                bad[at] ^= 0x20;
                let Ok((imgs, _)) = read_bundle(&bad) else { continue }; // e.g. no longer UTF-8
                let e = imgs[entry].verify().expect_err("a changed byte is detected");
                assert_eq!((e.kind, e.stored), (imgs[entry].kind, imgs[entry].checksum.unwrap()));
                assert_ne!(e.computed, e.stored);
                assert!(imgs[1 - entry].verify().is_ok(), "the other entry is intact");
            }
        }
        // The message names the image.
        let mut bad = bytes.clone();
        let at = image_offset(&bytes, 1);
        bad[at] ^= 1;
        let (imgs, _) = read_bundle(&bad).unwrap();
        let msg = imgs[1].verify().unwrap_err().to_string();
        assert!(msg.starts_with("the embedded sm_90 cubin image is corrupted (CRC-32 "), "{msg}");
        // A changed kind code (PTX ↔ cubin) is detected too.
        let mut bad = bytes.clone();
        bad[HEADER_SIZE] = 2;
        let (imgs, _) = read_bundle(&bad).unwrap();
        assert!(imgs[0].verify().is_err());
    }

    /// Offset of the first image byte of entry `n`.
    fn image_offset(bundle: &[u8], n: usize) -> usize {
        u64::from_le_bytes(bundle[HEADER_SIZE + n * ENTRY_SIZE + 32..][..8].try_into().unwrap()) as usize
    }

    /// Truncations and random changes of every header and entry field never
    /// make the reader panic (or allocate what the bytes cannot back): each
    /// is a bundle or a `FormatError`. Deterministic (xorshift), so a
    /// failure reproduces.
    #[test]
    fn damaged_bundles_are_errors_not_panics() {
        let bytes = write_bundle(&sample());
        for cut in 0..bytes.len() {
            let _ = read_bundle(&bytes[..cut]);
            let _ = read_section(&bytes[..cut]);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let table_end = HEADER_SIZE + 2 * ENTRY_SIZE;
        for _ in 0..20_000 {
            let mut bad = bytes.clone();
            for _ in 0..1 + next() % 3 {
                let r = next();
                // Mostly the header and the table (lengths, offsets, counts),
                // sometimes anywhere; extreme values or random bytes.
                let at = if r % 4 == 0 { (r >> 8) as usize % bad.len() } else { (r >> 8) as usize % table_end };
                bad[at] = match r % 5 {
                    0 => 0xff,
                    1 => 0,
                    _ => (r >> 40) as u8,
                };
            }
            if let Ok((imgs, size)) = read_bundle(&bad) {
                assert!(size <= bad.len());
                for i in imgs {
                    let _ = i.verify();
                }
            }
            let _ = read_section(&bad);
        }
        // Length fields at their extremes.
        for (at, v) in [(12, u32::MAX as u64), (16, u64::MAX), (16, u64::MAX - 7), (HEADER_SIZE + 40, u64::MAX), (HEADER_SIZE + 12, u32::MAX as u64)] {
            let mut bad = bytes.clone();
            if at == 12 || at == HEADER_SIZE + 12 {
                bad[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                bad[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            assert!(read_bundle(&bad).is_err(), "field at {at} = {v}");
        }
    }

    #[test]
    fn section_with_two_bundles_and_padding() {
        let a = write_bundle(&sample()[..1]);
        let b = write_bundle(&sample()[1..]);
        let mut section = vec![0u8; 16];
        section.extend(&a);
        section.extend([0u8; 8]);
        section.extend(&b);
        let imgs = read_section(&section).unwrap();
        assert_eq!(imgs.len(), 2);
        assert_eq!(imgs[0].kind, ImageKind::Ptx);
        assert_eq!(imgs[1].kind, ImageKind::Cubin);
        assert!(read_section(&[0u8; 24]).unwrap().is_empty());
    }

    #[test]
    fn rejects_corruption() {
        let mut bytes = write_bundle(&sample());
        assert_eq!(read_bundle(&bytes[..10]).unwrap_err(), FormatError::Truncated { needed: 32, have: 10 });
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert_eq!(read_bundle(&bad).unwrap_err(), FormatError::BadMagic);
        let mut bad = bytes.clone();
        bad[8] = 9;
        assert_eq!(read_bundle(&bad).unwrap_err(), FormatError::UnsupportedVersion(9));
        assert!(FormatError::UnsupportedVersion(9).to_string().contains("reads versions 1 to 2"));
        // image offset beyond the end
        bytes[HEADER_SIZE + 32..HEADER_SIZE + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            read_bundle(&bytes).unwrap_err(),
            FormatError::OutOfBounds { entry: 0, field: "image" }
        );
    }

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

    #[test]
    fn entries_in_ptx() {
        let ptx = "// .globl k1\n.visible .entry k1(\n\t.param .u64 p\n)\n.entry k2()\n.func f()\n";
        assert_eq!(ptx_entries(ptx), vec!["k1", "k2"]);
    }
}

/// Kernel symbols, derived identically by the proc macros (host and device
/// passes, possibly different compilers) and by `cargo offload`.
pub mod symbol {
    /// FNV-1a, 64 bit, over `parts`, each followed by the byte `0xff` (so that
    /// `("ab", "c")` and `("a", "bc")` differ): a tiny hash that is the same
    /// on every compiler and platform.
    pub fn fnv1a(parts: &[&str]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for part in parts {
            for b in part.bytes().chain([0xff]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    /// [`fnv1a`] folded to 32 bits.
    pub fn hash32(parts: &[&str]) -> u32 {
        let h = fnv1a(parts);
        (h >> 32) as u32 ^ h as u32
    }

    /// The device symbol of one instantiation of a generic kernel:
    /// `<base>_<hash of args>`, where `base` is the generic kernel's symbol
    /// (`__offload_kernel_<crate>_<fn>_<hash>`) and `args` the tuple of its
    /// type arguments as `core::any::type_name` spells it, e.g. `(f32,)` or
    /// `(f64, my_crate::Vec3)` (the host binary's v0 symbol names, demangled,
    /// spell it the same way).
    pub fn instance(base: &str, args: &str) -> String {
        format!("{base}_{:08x}", hash32(&[args]))
    }

    /// The file, in `dir`, listing the instantiations of the generic kernel
    /// `base` that host code uses: lines `<args>\t<binary>`.
    pub fn instances_file(dir: &std::path::Path, base: &str) -> std::path::PathBuf {
        dir.join(format!("{base}.txt"))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn instance_symbols_are_stable_and_distinct() {
            assert_eq!(instance("__offload_kernel_c_k_1", "(f32,)"), instance("__offload_kernel_c_k_1", "(f32,)"));
            assert_ne!(instance("__offload_kernel_c_k_1", "(f32,)"), instance("__offload_kernel_c_k_1", "(f64,)"));
            assert!(instance("b", "f32").starts_with("b_") && instance("b", "f32").len() == 2 + 8);
            assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
        }
    }
}
