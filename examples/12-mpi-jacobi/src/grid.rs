//! The problem, apart from MPI and devices: the grid's starting values,
//! which rows each rank owns, the serial reference, and the checksum.
//!
//! The grid has `ny` rows of `nx` points, row-major. Its first and last
//! rows and columns are the boundary, which never changes; every interior
//! point becomes the mean of its four neighbours at each step (Jacobi
//! iteration for Laplace's equation):
//!
//! ```text
//! new[i][j] = 0.25 * ((old[i-1][j] + old[i+1][j]) + (old[i][j-1] + old[i][j+1]))
//! ```
//!
//! always in this order of additions, on the GPU, on the host fallback and
//! in [`reference`], so that any split of the rows across ranks gives the
//! same bits.

/// The value at row `i`, column `j` before the first step: the top
/// boundary row hot (1 + j/nx), the bottom one 0.5, the side columns
/// i/ny, and the interior a pattern that is not smooth, so that every
/// point matters.
pub fn initial(nx: usize, ny: usize, i: usize, j: usize) -> f64 {
    if i == 0 {
        1.0 + j as f64 / nx as f64
    } else if i + 1 == ny {
        0.5
    } else if j == 0 || j + 1 == nx {
        i as f64 / ny as f64
    } else {
        ((i * 7 + j * 3) % 11) as f64 / 11.0
    }
}

/// The rows of the whole grid from `first` to `last` (exclusive), row-major.
pub fn rows(nx: usize, ny: usize, first: usize, last: usize) -> Vec<f64> {
    (first..last).flat_map(|i| (0..nx).map(move |j| initial(nx, ny, i, j))).collect()
}

/// The interior rows rank `rank` of `ranks` owns: `first..last`, a block
/// of consecutive rows, the blocks as equal as they can be and in rank
/// order. `None` if there are fewer interior rows than ranks.
pub fn block(ny: usize, rank: usize, ranks: usize) -> Option<(usize, usize)> {
    let interior = ny.checked_sub(2)?;
    if interior < ranks {
        return None;
    }
    let at = |r: usize| 1 + interior * r / ranks;
    Some((at(rank), at(rank + 1)))
}

/// `iters` steps on the whole grid in one thread: what every split must
/// reproduce bit for bit.
pub fn reference(nx: usize, ny: usize, iters: usize) -> Vec<f64> {
    let mut a = rows(nx, ny, 0, ny);
    let mut b = a.clone();
    for _ in 0..iters {
        for i in 1..ny - 1 {
            for j in 1..nx - 1 {
                let k = i * nx + j;
                b[k] = 0.25 * ((a[k - nx] + a[k + nx]) + (a[k - 1] + a[k + 1]));
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// FNV-1a (64-bit) over the little-endian bytes of each value's bits, in
/// order: equal for two grids exactly when (but for a collision) every
/// value has the same bits.
pub fn fnv1a(values: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        for byte in v.to_bits().to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_cover_the_interior_in_order() {
        for (ny, ranks) in [(10, 1), (10, 3), (10, 8), (258, 4), (3, 1)] {
            let blocks: Vec<(usize, usize)> = (0..ranks).map(|r| block(ny, r, ranks).unwrap()).collect();
            assert_eq!(blocks[0].0, 1);
            assert_eq!(blocks[ranks - 1].1, ny - 1);
            for w in blocks.windows(2) {
                assert_eq!(w[0].1, w[1].0);
            }
            assert!(blocks.iter().all(|(a, b)| b > a), "{blocks:?}");
        }
        assert_eq!(block(10, 0, 9), None);
        assert_eq!(block(1, 0, 1), None);
    }

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        // FNV-1a 64 of the empty input is the offset basis; of the 8 bytes
        // of 0.0 (all zero), eight rounds of `h = (h ^ 0) * prime`.
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        assert_eq!(fnv1a(&[0.0]), h);
        assert_ne!(fnv1a(&[0.0]), fnv1a(&[-0.0]));
    }

    #[test]
    fn one_step_by_hand() {
        // 4 x 3: one interior row of two points.
        let (nx, ny) = (4, 3);
        let a = rows(nx, ny, 0, ny);
        let got = reference(nx, ny, 1);
        for j in 1..3 {
            let want = 0.25 * ((a[j] + a[2 * nx + j]) + (a[nx + j - 1] + a[nx + j + 1]));
            assert_eq!(got[nx + j].to_bits(), want.to_bits());
        }
        assert_eq!(&got[..nx], &a[..nx]);
    }
}
