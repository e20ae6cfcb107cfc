//! How the workers of a host-fallback launch share its blocks: runs of
//! consecutive blocks, claimed by guided self-scheduling (OpenMP's `guided`
//! schedule; Polychronopoulos and Kuck, "Guided Self-Scheduling", IEEE
//! Trans. Computers, 1987). A run is the unclaimed blocks divided by twice
//! the workers, at least one block. The first runs are long (neighbouring
//! blocks usually touch neighbouring memory, and claims are few), the last
//! ones single blocks, so that a worker that starts late or runs slower
//! than the others (a core shared with other work) delays the end of the
//! launch by about one block at most; runs of a fixed eighth of a worker's
//! share, as before, let it lag by up to that eighth.

use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};

/// The blocks of one launch (linear indices) not claimed yet.
pub(super) struct Claims {
    blocks: u64,
    /// A run is the unclaimed blocks divided by this: twice the workers.
    split: u64,
    /// The first block not claimed.
    next: AtomicU64,
}

impl Claims {
    /// The blocks `0..blocks` of a launch that `workers` workers run.
    pub(super) fn new(blocks: u64, workers: usize) -> Claims {
        Claims { blocks, split: (workers as u64).max(1) * 2, next: AtomicU64::new(0) }
    }

    /// The next run of consecutive blocks for the calling worker; `None`
    /// when every block is claimed. Every block is in exactly one run.
    pub(super) fn claim(&self) -> Option<Range<u64>> {
        let mut first = self.next.load(Ordering::Relaxed);
        loop {
            if first >= self.blocks {
                return None;
            }
            let end = first + ((self.blocks - first) / self.split).max(1);
            match self.next.compare_exchange_weak(first, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(first..end),
                Err(seen) => first = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn runs_shrink_from_a_share_over_two_to_single_blocks() {
        let c = Claims::new(1000, 4);
        let runs: Vec<Range<u64>> = core::iter::from_fn(|| c.claim()).collect();
        // 1000 / 8 = 125, then 875 / 8 = 109, ...: each run is the rest
        // over 8, in order, and the runs tile 0..1000.
        let mut first = 0;
        for r in &runs {
            assert_eq!(r.start, first);
            assert_eq!(r.end - r.start, ((1000 - first) / 8).max(1), "run {r:?}");
            first = r.end;
        }
        assert_eq!(first, 1000);
        assert_eq!(runs[0], 0..125);
        // The last 8 blocks are claimed one at a time.
        assert!(runs[runs.len() - 8..].iter().all(|r| r.end - r.start == 1));
        assert_eq!(c.claim(), None);
    }

    #[test]
    fn workers_claiming_at_once_get_every_block_once() {
        let c = Claims::new(100_000, 3);
        let mut seen = std::vec![0u8; 100_000];
        let all: Vec<Vec<Range<u64>>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3).map(|_| s.spawn(|| core::iter::from_fn(|| c.claim()).collect())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in all.into_iter().flatten() {
            for b in r {
                seen[b as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn fewer_blocks_than_runs() {
        let c = Claims::new(3, 16);
        assert_eq!([c.claim(), c.claim(), c.claim(), c.claim()], [Some(0..1), Some(1..2), Some(2..3), None]);
        assert_eq!(Claims::new(0, 1).claim(), None);
    }
}
