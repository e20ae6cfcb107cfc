//! The one content hash of offload: 64-bit FNV-1a (Fowler, Noll, Vo;
//! `draft-eastlake-fnv`), as the `fnv` crate computes it.
//!
//! Who uses it, and why it must never change:
//! - kernel symbols ([`crate::symbol`]): the proc macros (in the host and the
//!   device pass, possibly different compilers), the runtime and
//!   `cargo offload` derive the same names from [`hash32`], so its bits are
//!   part of the ABI between them;
//! - cache keys and file names of `cargo offload` and `offload-linker`
//!   (device links, cubins, image objects, instantiation lists): a change
//!   only invalidates caches, but they use the same function so that there
//!   is one to get right.
//!
//! Not a cryptographic hash: the keys name files we write ourselves.
//!
//! Never use `std::hash::Hash` with these hashers for a stable value: the
//! bytes `Hash` feeds a hasher are not specified across Rust releases. Every
//! function here writes bytes explicitly.

use std::hash::Hasher as _;

use fnv::FnvHasher;

/// FNV-1a 64 of `bytes`, with nothing appended (`fnv64(b"") ==
/// 0xcbf29ce484222325`, the offset basis).
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h = FnvHasher::default();
    h.write(bytes);
    h.finish()
}

/// FNV-1a 64 over `parts`, each followed by the byte `0xff` (which UTF-8
/// never contains), so that `("ab", "c")` and `("a", "bc")` differ.
pub fn fnv64_parts<P: AsRef<[u8]>>(parts: &[P]) -> u64 {
    let mut h = FnvHasher::default();
    for p in parts {
        h.write(p.as_ref());
        h.write(&[0xff]);
    }
    h.finish()
}

/// A 64-bit hash folded to 32 bits: the high half XOR the low half.
pub fn fold32(h: u64) -> u32 {
    (h >> 32) as u32 ^ h as u32
}

/// [`fnv64_parts`] of strings folded to 32 bits: the hash in kernel symbols.
pub fn hash32(parts: &[&str]) -> u32 {
    fold32(fnv64_parts(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published FNV-1a 64 test vectors (draft-eastlake-fnv, appendix
    /// C), and values computed independently (Python, the algorithm written
    /// out) for the separator and folding rules.
    #[test]
    fn known_values() {
        assert_eq!(fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64(b"foobar"), 0x8594_4171_f739_67e8);
        let parts = ["c", "src/a.rs", "3", "4", "add"];
        assert_eq!(fnv64_parts(&parts), 0xd79d_6b5b_b651_46f2);
        assert_eq!(hash32(&parts), 0x61cc_2da9);
        assert_eq!(hash32(&["(f32,)"]), 0x4e67_736d);
        assert_eq!(hash32(&["(f64, my_crate::Vec3)"]), 0xfe42_4212);
        assert_ne!(fnv64_parts(&["ab", "c"]), fnv64_parts(&["a", "bc"]));
        assert_eq!(fnv64_parts::<&[u8]>(&[]), fnv64(b""));
    }
}
