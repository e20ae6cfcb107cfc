//! The text of a warp collective reached by part of a warp, written the
//! same way on both backends: the host fallback's scheduler (`hostsim`)
//! finds such a warp when its blocked lanes can never be released; a GPU
//! thread finds it with a ballot at the start of each collective (see
//! [`warp`](crate::warp)) and writes the text into the panic record without
//! `core::fmt` (which would cost every kernel with a collective its
//! registers). The host turns a record whose message starts with
//! [`PREFIX`] into [`Error::Divergence`](crate::Error).
// AMD GPU code objects have no warp collectives yet.
#![cfg_attr(target_arch = "amdgpu", allow(dead_code))]

/// How a GPU thread's record says "divergence" instead of "panic".
pub(crate) const PREFIX: &str = "offload: warp collective in divergent code: ";

/// The collectives' names in divergence reports (both backends).
pub(crate) mod names {
    pub const SHUFFLE_IDX: &str = "shuffle_idx (shfl.sync.idx)";
    pub const SHUFFLE_UP: &str = "shuffle_up (shfl.sync.up)";
    pub const SHUFFLE_DOWN: &str = "shuffle_down (shfl.sync.down)";
    pub const SHUFFLE_XOR: &str = "shuffle_xor (shfl.sync.bfly)";
    pub const ALL: &str = "all (vote.sync.all)";
    pub const ANY: &str = "any (vote.sync.any)";
    pub const BALLOT: &str = "ballot (vote.sync.ballot)";
    pub const SYNC_WARP: &str = "sync_warp (bar.warp.sync)";
}

/// Writes into a byte buffer, dropping what does not fit.
pub(crate) struct Bytes<'a> {
    pub buf: &'a mut [u8],
    pub len: usize,
}

impl Bytes<'_> {
    pub(crate) fn str(&mut self, s: &str) {
        for &b in s.as_bytes() {
            if self.len < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }

    fn num(&mut self, mut v: u32) {
        let mut digits = [0u8; 10];
        let mut n = 0;
        loop {
            digits[n] = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        while n > 0 {
            n -= 1;
            let d = [digits[n]];
            // SAFETY: an ASCII digit is valid UTF-8.
            self.str(unsafe { core::str::from_utf8_unchecked(&d) });
        }
    }

    /// The lanes of `mask` as `0-3, 7, 9-31`, or `none`.
    fn lanes(&mut self, mask: u32) {
        if mask == 0 {
            self.str("none");
            return;
        }
        let mut first = true;
        let mut l = 0u32;
        while l < 32 {
            if mask & (1 << l) == 0 {
                l += 1;
                continue;
            }
            let start = l;
            while l + 1 < 32 && mask & (1 << (l + 1)) != 0 {
                l += 1;
            }
            if !first {
                self.str(", ");
            }
            first = false;
            self.num(start);
            if l > start {
                self.str("-");
                self.num(l);
            }
            l += 1;
        }
    }
}

/// Writes why warp `warp`'s collective `op` cannot complete: the lanes
/// `waiting` at it, those that `returned`, those waiting at `sync_threads`
/// (`barrier`); an empty group is left out. `op` is the collective's name
/// as [`names`] spells it.
pub(crate) fn write_reason(out: &mut Bytes<'_>, op: &str, warp: u32, waiting: u32, returned: u32, barrier: u32) {
    out.str("warp collective ");
    out.str(op);
    out.str(" in divergent code: in warp ");
    out.num(warp);
    out.str(", lanes ");
    out.lanes(waiting);
    out.str(" wait for it");
    if returned != 0 {
        out.str(", lanes ");
        out.lanes(returned);
        out.str(" have returned");
    }
    if barrier != 0 {
        out.str(", lanes ");
        out.lanes(barrier);
        out.str(" wait at sync_threads");
    }
    out.str(
        "; every existing lane of the warp must reach the same collective (PTX ISA: shfl.sync/vote.sync \
         membermask)",
    );
}

#[cfg(all(test, not(any(target_arch = "nvptx64", target_arch = "amdgpu"))))]
mod tests {
    use super::*;

    fn reason(op: &str, warp: u32, waiting: u32, returned: u32, barrier: u32) -> std::string::String {
        let mut buf = [0u8; 512];
        let mut b = Bytes { buf: &mut buf, len: 0 };
        write_reason(&mut b, op, warp, waiting, returned, barrier);
        let n = b.len;
        std::string::String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn lanes_as_ranges() {
        let r = reason("x", 3, 0x0000_ffff, 0xffff_0000, 0);
        assert!(r.contains("in warp 3, lanes 0-15 wait for it, lanes 16-31 have returned; every existing lane"), "{r}");
        let r = reason("x", 12, 0b1010_0111, 1 << 31, 1 << 3);
        assert!(r.contains("lanes 0-2, 5, 7 wait for it, lanes 31 have returned, lanes 3 wait at sync_threads; every"), "{r}");
        // No group is named "none".
        let r = reason("x", 0, 0xffff, 0, 0xffff_0000);
        assert!(r.contains("lanes 0-15 wait for it, lanes 16-31 wait at sync_threads; every"), "{r}");
        assert!(!r.contains("none"), "{r}");
    }

    #[test]
    fn cut_to_the_buffer() {
        let mut buf = [0u8; 10];
        let mut b = Bytes { buf: &mut buf, len: 0 };
        write_reason(&mut b, "shuffle_xor", 0, 1, 2, 0);
        assert_eq!(&buf, b"warp colle");
    }
}
