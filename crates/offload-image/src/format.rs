//! The bundle's types and constants (see the [layout](crate#layout)): what
//! an image is, the errors of a damaged bundle, and the per-entry checksum.

use std::fmt;

/// The magic bytes a bundle starts with.
pub const MAGIC: [u8; 8] = *b"OFLDIMG\0";
/// The layout version this crate writes (it also reads version 1).
pub const FORMAT_VERSION: u32 = 2;
/// Size in bytes of [`Header`](crate#layout).
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
    pub(crate) fn code(self) -> u32 {
        match self {
            ImageKind::Ptx => 1,
            ImageKind::Cubin => 2,
            ImageKind::AmdgpuElf => 3,
        }
    }

    pub(crate) fn from_code(code: u32) -> Option<Self> {
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
    /// [layout](crate#layout)); `None` in a version 1 bundle.
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

/// The checksum of one entry (see the [layout](crate#layout)).
pub(crate) fn entry_checksum(
    kind: ImageKind,
    flags: u32,
    triple: &str,
    arch: &str,
    kernels: &str,
    image: &[u8],
) -> u32 {
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

pub(crate) fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// Two images of the same kernels (PTX for sm_80, a cubin for sm_90), for
/// the tests of the reader, the writer and the selection rule.
#[cfg(test)]
pub(crate) fn sample() -> Vec<OwnedImage> {
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
