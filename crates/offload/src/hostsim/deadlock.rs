//! What the scheduler (`block`) reports when no thread of a block can
//! proceed: a barrier or warp collective in divergent code (on a GPU the
//! block would hang or misbehave). The text names the first incomplete
//! warp collective, as a GPU thread writes it (`report::divergence`), or
//! says how many threads wait where.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::collective::WARP;
use super::state::{Block, Wait};

/// Why the block, every thread of which is waiting or has returned, cannot
/// proceed.
pub(super) fn diagnose(b: &Block) -> String {
    let n = b.n as usize;
    let count = |want: Wait| b.wait.iter().filter(|w| w.get() == want).count();
    let (at_barrier, at_warp) = (count(Wait::Barrier), count(Wait::Warp));
    for w in 0..n.div_ceil(WARP as usize) {
        let lanes = b.lanes(w);
        let waiting: Vec<usize> =
            lanes.clone().filter(|&t| b.wait[t].get() == Wait::Warp).map(|t| t - lanes.start).collect();
        if waiting.is_empty() || waiting.len() == lanes.len() {
            continue;
        }
        let op = b.input[lanes.start + waiting[0]].get().0;
        let mask = |want: Wait| {
            lanes.clone().filter(|&t| b.wait[t].get() == want).fold(0u32, |m, t| m | 1 << (t - lanes.start))
        };
        let mut buf = [0u8; 512];
        let mut text = crate::report::divergence::Bytes { buf: &mut buf, len: 0 };
        crate::report::divergence::write_reason(
            &mut text,
            op.name(),
            w as u32,
            mask(Wait::Warp),
            mask(Wait::Done),
            mask(Wait::Barrier),
        );
        let n = text.len;
        return String::from_utf8_lossy(&buf[..n]).into_owned();
    }
    format!("{at_barrier} thread(s) wait at sync_threads while {at_warp} wait at warp collectives; the block cannot proceed")
}

/// The error of a warp all of whose lanes (`lanes`, linear thread indices)
/// wait, at collectives of different kinds; `None` if they agree.
pub(super) fn mixed_collectives(b: &Block, w: usize, lanes: core::ops::Range<usize>) -> Option<String> {
    let op = b.input[lanes.start].get().0;
    let t = lanes.clone().find(|&t| b.input[t].get().0 != op)?;
    Some(format!(
        "lanes of warp {w} reached different warp collectives: lane 0 {} and lane {} {}",
        op.name(),
        t - lanes.start,
        b.input[t].get().0.name()
    ))
}

/// The error of a block in phases (`phases`) in which `hidden` threads wait
/// at a `sync_threads` inside a function the kernel calls while `body`
/// threads wait at one of the kernel's body: they are at different
/// barriers.
pub(super) fn mixed_barriers(hidden: usize, body: u32) -> String {
    format!(
        "{hidden} thread(s) wait at sync_threads inside a function the kernel calls while {body} wait at a \
         sync_threads of the kernel's body; every thread of a block must reach the same barriers"
    )
}
