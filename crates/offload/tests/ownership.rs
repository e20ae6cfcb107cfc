//! Ownership by the data's shape (`#[kernel(shape(…))]`, `DisjointSliceNd`)
//! and the debug-build panic of a `get_mut` that reaches another thread's
//! element, written once for every backend: under plain `cargo test` the
//! kernels run on the host fallback, under `cargo offload test` on a GPU.
//! Every output is compared with values computed here on the host.

use offload::prelude::*;
#[offload::host]
use offload::Error;

/// The value the tests write at `(x, y, z)`: distinct for every element.
fn value(x: usize, y: usize, z: usize) -> u32 {
    (x + 1000 * y + 1_000_000 * z) as u32
}

/// One pixel per thread of a grid rounded up to 16 × 16 blocks.
#[kernel(shape(out = (w, h)))]
fn fill_2d(w: u32, h: u32, out: &mut [u32]) {
    if let Some(([x, y], px)) = out.at_thread() {
        *px = value(x, y, 0);
    }
}

/// The same with the 1-D `DisjointSlice` and the index a CUDA programmer
/// writes, `y * w + x`: right only if the grid is exactly `w` threads wide.
#[kernel]
fn fill_flat(w: u32, h: u32, out: &mut [u32]) {
    let p = offload::global_thread_idx();
    let (x, y) = (p.x as usize, p.y as usize);
    if x < w as usize && y < h as usize {
        if let Some(px) = out.get_mut(y * w as usize + x) {
            *px = value(x, y, 0);
        }
    }
}

/// The 16 × 16 launch covering `w × h`.
fn blocks_16(w: u32, h: u32) -> LaunchConfig {
    LaunchConfig::new((w.div_ceil(16), h.div_ceil(16)), (16u32, 16u32))
}

#[test]
fn a_grid_wider_and_taller_than_the_image_writes_every_pixel() {
    // 1000 × 750 pixels in 63 × 47 blocks: 1008 × 752 threads.
    let (w, h) = (1000u32, 750u32);
    let mut out = vec![u32::MAX; (w * h) as usize];
    fill_2d(blocks_16(w, h), w, h, &mut out).unwrap();
    for (i, &v) in out.iter().enumerate() {
        let (x, y) = (i % w as usize, i / w as usize);
        assert_eq!(v, value(x, y, 0), "pixel ({x}, {y})");
    }
}

#[test]
fn the_flat_index_in_a_wider_grid_is_loud_in_debug_builds() {
    // The case (there 1000 × 750), smaller: on the host fallback
    // each thread's panic unwinds, 0.15 M of them took seconds. 1-D
    // ownership in a grid 208 threads wide: pixel (x, y) with y ≥ 1
    // belongs to another thread.
    let (w, h) = (200u32, 150u32);
    let mut out = vec![u32::MAX; (w * h) as usize];
    let r = fill_flat(blocks_16(w, h), w, h, &mut out);
    if cfg!(debug_assertions) {
        let e = r.unwrap_err();
        let Error::KernelPanic(p) = &e else { panic!("{e}") };
        assert!(p.message.contains("belongs to thread (") && p.message.contains("shape("), "{e}");
    } else {
        // Without debug assertions: `None`, and the row 0 alone is written.
        r.unwrap();
        assert!(out[..w as usize].iter().enumerate().all(|(x, &v)| v == value(x, 0, 0)));
        assert_eq!(out[w as usize..].iter().filter(|&&v| v == u32::MAX).count(), out.len() - w as usize);
    }
}

/// Every element of an `nx × ny × nz` volume, by a grid of any size.
#[kernel(shape(vol = (nx, ny, nz)))]
fn fill_3d(nx: usize, ny: usize, nz: u64, vol: &mut [u32]) {
    for ([x, y, z], v) in vol.grid_stride() {
        *v = value(x, y, z);
    }
}

fn check_3d(vol: &[u32], [nx, ny, nz]: [usize; 3]) {
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                assert_eq!(vol[x + nx * (y + ny * z)], value(x, y, z), "({x}, {y}, {z})");
            }
        }
    }
}

#[test]
fn a_3d_volume_is_owned_by_coordinates_in_larger_and_smaller_grids() {
    let (nx, ny, nz) = (19usize, 11usize, 5usize);
    for (grid, block) in [
        ((3u32, 2u32, 2u32), (8u32, 8u32, 4u32)), // 24 × 16 × 8 threads: larger
        ((1, 1, 1), (4, 2, 2)),                   // 4 × 2 × 2: grid-stride
        ((2, 1, 1), (16, 1, 1)),                  // 1-D launch: y and z stride by 1
    ] {
        let mut vol = vec![u32::MAX; nx * ny * nz];
        fill_3d(LaunchConfig::new(grid, block), nx, ny, nz as u64, &mut vol).unwrap();
        check_3d(&vol, [nx, ny, nz]);
    }
}

#[test]
fn extents_that_do_not_cover_the_slice_are_an_error_before_the_launch() {
    let mut out = vec![7u32; 100];
    let e = fill_2d(blocks_16(10, 11), 10, 11, &mut out).unwrap_err();
    let Error::InvalidLaunch(l) = &e else { panic!("{e}") };
    assert!(l.reason.contains("`shape(out = (w, h))`, but `out` has 100 elements and w = 10, h = 11 make 110"), "{e}");
    assert!(out.iter().all(|&v| v == 7), "nothing ran");
}

/// Each thread asks for its right neighbour's element.
#[kernel(shape(out = (w, h)))]
fn neighbour(w: u32, h: u32, out: &mut [u32]) {
    let p = offload::global_thread_idx();
    if let Some(px) = out.get_mut([p.x as usize + 1, p.y as usize]) {
        *px = 1;
    }
}

#[test]
#[cfg(debug_assertions)]
fn get_mut_of_a_neighbours_element_panics_naming_the_owner() {
    // 8 × 4 pixels, one block of 8 × 4 threads: the thread at (x, y) asks
    // for (x + 1, y), which thread (x + 1, y) owns; the last column asks
    // outside the image (None, no panic).
    let mut out = vec![0u32; 32];
    let e = neighbour(LaunchConfig::new(1u32, (8u32, 4u32)), 8, 4, &mut out).unwrap_err();
    let Error::KernelPanic(p) = &e else { panic!("{e}") };
    let offload::error::KernelPanic { message, thread, block, .. } = &**p;
    assert_eq!(block, "(0, 0, 0)");
    let (x, y) = parse_xy(thread);
    let want =
        format!("get_mut([{}, {y}]): the element belongs to thread ({}, {y}, 0) of block (0, 0, 0)", x + 1, x + 1);
    assert!(message.contains(&want), "{e}");
}

/// `(x, y)` of an index `"(x, y, z)"`.
#[offload::host]
fn parse_xy(index: &str) -> (u32, u32) {
    let v: Vec<u32> = index.trim_matches(|c| c == '(' || c == ')').split(", ").map(|s| s.parse().unwrap()).collect();
    (v[0], v[1])
}
