//! The ownership rules of `DisjointSlice` and `DisjointSliceNd`, checked by
//! playing every thread of a launch on this thread (setting the simulated
//! thread context) and counting who reaches each element.

use super::*;
use crate::device::dim::Dim3;
use crate::device::disjoint::DisjointSlice;
use crate::device::thread::{ThreadCtx, CTX};
use std::string::String;
use std::vec;
use std::vec::Vec;

/// Calls `f(global position)` as each thread of a launch of `grid` blocks of
/// `block` threads, then restores the one-thread context.
fn each_thread(grid: Dim3, block: Dim3, mut f: impl FnMut([usize; 3])) {
    for bz in 0..grid.z {
        for by in 0..grid.y {
            for bx in 0..grid.x {
                for tz in 0..block.z {
                    for ty in 0..block.y {
                        for tx in 0..block.x {
                            let ctx = ThreadCtx {
                                thread: Dim3::new(tx, ty, tz),
                                block: Dim3::new(bx, by, bz),
                                block_dim: block,
                                grid_dim: grid,
                            };
                            CTX.with(|c| c.set(ctx));
                            let pos = |b: u32, d: u32, t: u32| (b * d + t) as usize;
                            f([pos(bx, block.x, tx), pos(by, block.y, ty), pos(bz, block.z, tz)]);
                        }
                    }
                }
            }
        }
    }
    CTX.with(|c| c.set(ThreadCtx::SINGLE));
}

/// For each element of a `w × h` array, the positions of the threads whose
/// `grid_stride()` reached it; asserts each reached element is `owns`ed and
/// that `at_thread` is the first element of the loop.
fn reach_2d(grid: Dim3, block: Dim3, w: usize, h: usize) -> Vec<Vec<[usize; 3]>> {
    let mut data = vec![0u8; w * h];
    let mut who = vec![Vec::new(); w * h];
    each_thread(grid, block, |pos| {
        // SAFETY: one view per simulated thread, all with the same extents;
        // only this test touches `data` meanwhile.
        let mut v = unsafe { DisjointSlice2d::from_raw_parts(data.as_mut_ptr(), [w, h]) };
        let first = v.at_thread().map(|(at, _)| at);
        let mut seen = Vec::new();
        for (at, _) in v.grid_stride() {
            seen.push(at);
        }
        for &at in &seen {
            assert!(v.owns(at), "{pos:?} reached {at:?} without owning it");
            who[at[0] + w * at[1]].push(pos);
        }
        assert_eq!(first, seen.first().copied().filter(|&a| a == [pos[0], pos[1]]), "thread {pos:?}");
    });
    who
}

#[test]
fn a_grid_wider_and_taller_than_the_array_reaches_each_element_once_by_coordinates() {
    // 37 × 21 pixels, 16 × 16 blocks rounded up: 3 × 2 blocks, 48 × 32 threads.
    let (w, h) = (37, 21);
    let who = reach_2d(Dim3::new(3, 2, 1), Dim3::new(16, 16, 1), w, h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(who[x + w * y], [[x, y, 0]], "element ({x}, {y})");
        }
    }
}

#[test]
fn a_grid_smaller_than_the_array_strides_over_it() {
    // 2 × 2 blocks of 4 × 2 threads (8 × 4) over 19 × 9 elements.
    let (w, h) = (19, 9);
    let who = reach_2d(Dim3::new(2, 2, 1), Dim3::new(4, 2, 1), w, h);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(who[x + w * y], [[x % 8, y % 4, 0]], "element ({x}, {y})");
        }
    }
    // In a 3-D launch only the plane z = 0 owns a 2-D array.
    let who = reach_2d(Dim3::new(1, 1, 2), Dim3::new(8, 4, 2), w, h);
    assert!(who.iter().enumerate().all(|(i, t)| *t == [[(i % w) % 8, (i / w) % 4, 0]]));
}

#[test]
fn a_3d_array_is_owned_by_3d_coordinates() {
    let (nx, ny, nz) = (5usize, 7usize, 3usize);
    let (grid, block) = (Dim3::new(2, 2, 1), Dim3::new(2, 2, 2));
    let mut data = vec![u32::MAX; nx * ny * nz];
    let mut hits = vec![0u32; nx * ny * nz];
    each_thread(grid, block, |pos| {
        // SAFETY: as in `reach_2d`.
        let mut v = unsafe { DisjointSlice3d::from_raw_parts(data.as_mut_ptr(), [nx, ny, nz]) };
        assert_eq!((v.extents(), v.len()), ([nx, ny, nz], nx * ny * nz));
        for (at, e) in v.grid_stride() {
            assert_eq!([at[0] % 4, at[1] % 4, at[2] % 2], pos, "owner of {at:?}");
            *e = (at[0] + nx * (at[1] + ny * at[2])) as u32;
            hits[at[0] + nx * (at[1] + ny * at[2])] += 1;
        }
    });
    assert!(hits.iter().all(|&n| n == 1), "{hits:?}");
    // Each element holds its own row-major index, written by its owner.
    assert_eq!(data, (0..(nx * ny * nz) as u32).collect::<Vec<_>>());
}

/// The panic message of `f`, run as thread `thread` of block `block` in a
/// launch of `grid` blocks of `bd` threads.
fn panic_of(grid: Dim3, bd: Dim3, block: Dim3, thread: Dim3, f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    CTX.with(|c| c.set(ThreadCtx { thread, block, block_dim: bd, grid_dim: grid }));
    let r = std::panic::catch_unwind(f);
    CTX.with(|c| c.set(ThreadCtx::SINGLE));
    let e = r.expect_err("expected a panic");
    e.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
#[cfg(debug_assertions)]
fn get_mut_of_another_threads_element_panics_naming_the_owner() {
    let mut data = vec![0u32; 100];
    let p = data.as_mut_ptr() as usize;
    // 1-D: 2 blocks of 32 threads (64), element 70 belongs to global index
    // 6: thread 6 of block 0.
    let msg = panic_of(Dim3::new(2, 1, 1), Dim3::new(32, 1, 1), Dim3::new(1, 0, 0), Dim3::new(3, 0, 0), || {
        // SAFETY: one view, of live memory.
        let mut s = unsafe { DisjointSlice::from_raw_parts(p as *mut u32, 100) };
        assert!(s.get_mut_if_owned(70).is_none());
        let _ = s.get_mut(70);
    });
    assert!(msg.contains("element 70 belongs to thread (6, 0, 0) of block (0, 0, 0)"), "{msg}");
    // 2-D, 10 × 10 array, 2 × 2 blocks of 4 × 4 threads (8 × 8): element
    // (9, 3) belongs to global (1, 3): thread (1, 3) of block (0, 0).
    let msg = panic_of(Dim3::new(2, 2, 1), Dim3::new(4, 4, 1), Dim3::new(1, 1, 0), Dim3::new(2, 2, 0), || {
        // SAFETY: as above.
        let mut v = unsafe { DisjointSlice2d::from_raw_parts(p as *mut u32, [10, 10]) };
        assert!(v.get_mut_if_owned([9, 3]).is_none());
        assert!(v.get_mut([10, 3]).is_none(), "outside the array: None, no panic");
        let _ = v.get_mut([9, 3]);
    });
    assert!(msg.contains("get_mut([9, 3]): the element belongs to thread (1, 3, 0) of block (0, 0, 0)"), "{msg}");
    drop(data);
}

#[test]
fn owned_elements_and_out_of_bounds_return_without_panicking() {
    let mut data = vec![0u32; 12];
    let p = data.as_mut_ptr();
    each_thread(Dim3::new(2, 1, 1), Dim3::new(4, 2, 1), |pos| {
        // SAFETY: one view per simulated thread, same extents.
        let mut v = unsafe { DisjointSlice2d::from_raw_parts(p, [4, 3]) };
        if let Some(e) = v.get_mut([pos[0] % 8, pos[1] % 2]) {
            *e += 1;
        }
        assert!(v.get_mut([4, 0]).is_none() && v.get_mut([0, 3]).is_none());
        // SAFETY: as above.
        let mut s = unsafe { DisjointSlice::from_raw_parts(p, 12) };
        assert!(s.get_mut(12).is_none());
    });
    // Rows 0 and 1 were written by their owners (the grid is 8 × 2).
    assert_eq!(&data[..8], &[1; 8]);
    assert_eq!(&data[8..], &[0; 4]);
}
