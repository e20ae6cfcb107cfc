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

pub mod file;
mod format;
pub mod hash;
pub mod probe;
mod ptx;
mod read;
mod select;
pub mod symbol;
mod write;

pub use format::{
    Corrupted, FormatError, Image, ImageKind, OwnedImage, ENTRY_SIZE, ENTRY_SIZE_V1, FORMAT_VERSION, HEADER_SIZE,
    MAGIC, SECTION_NAME,
};
pub use ptx::ptx_entries;
pub use read::{read_bundle, read_section};
pub use select::{parse_sm, select, ArchSuffix, Device, NvArch};
pub use write::write_bundle;
