//! 1-D, 2-D and 3-D grids; index helpers; grid-stride loops.

use offload::{block_dim, block_idx, global_dim, global_index, global_size, global_thread_idx, grid_dim, kernel, thread_idx};

/// Each thread records who it is, at its `global_index()`.
#[kernel]
fn whoami(out: &mut [u64]) {
    if let Some((_, o)) = out.at_thread() {
        let t = thread_idx();
        let b = block_idx();
        let bd = block_dim();
        let gd = grid_dim();
        let g = global_thread_idx();
        let w = global_dim();
        // 6 bits per coordinate, then a check of the extents and of global_size
        let ok = (gd.x * bd.x == w.x && gd.y * bd.y == w.y && gd.z * bd.z == w.z) as u64
            & (global_size() as u64 == w.x as u64 * w.y as u64 * w.z as u64) as u64
            & (g.x == b.x * bd.x + t.x) as u64;
        *o = t.x as u64
            | (t.y as u64) << 6
            | (t.z as u64) << 12
            | (b.x as u64) << 18
            | (b.y as u64) << 24
            | (b.z as u64) << 30
            | ok << 36;
    }
}

/// A 2-D launch over a `width`-column matrix: element (row, col) gets
/// `row * 1000 + col`.
#[kernel]
fn fill_2d(width: u32, m: &mut [u32]) {
    if let Some((i, e)) = m.at_thread() {
        let g = global_thread_idx();
        // with gridDim.x * blockDim.x == width, global_index is row-major
        *e = if i == (g.y * width + g.x) as usize { g.y * 1000 + g.x } else { u32::MAX };
    }
}

/// Grid-stride sum: each thread adds every `global_size()`-th element.
#[kernel]
fn stride_sums(x: &[f32], out: &mut [f32]) {
    let mut s = 0.0f32;
    for i in offload::grid_stride(x.len()) {
        s += x[i];
    }
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
    let _ = global_index();
}

#[offload::host]
pub fn check() -> Result<String, String> {
    use offload::{Dim3, LaunchConfig};
    // 3-D
    let (grid, block) = (Dim3::new(3, 2, 4), Dim3::new(4, 3, 2));
    let n = (grid.volume() * block.volume()) as usize;
    let mut out = vec![0u64; n];
    whoami(LaunchConfig::new(grid, block), &mut out).map_err(|e| e.to_string())?;
    for (i, &v) in out.iter().enumerate() {
        let f = |s: u32| ((v >> s) & 63) as u32;
        let (t, b) = (Dim3::new(f(0), f(6), f(12)), Dim3::new(f(18), f(24), f(30)));
        let (gx, gy, gz) = (b.x * block.x + t.x, b.y * block.y + t.y, b.z * block.z + t.z);
        let want = gx as usize + 12 * (gy as usize + 6 * gz as usize);
        if want != i || (v >> 36) != 1 || t.x >= block.x || b.z >= grid.z {
            return Err(format!("3-D: element {i} holds thread {t} block {b} (ok bit {})", v >> 36));
        }
    }
    // 2-D: 64 x 48 matrix, blocks of 16 x 8
    let (w, h) = (64u32, 48u32);
    let mut m = vec![0u32; (w * h) as usize];
    fill_2d(LaunchConfig::new((w / 16, h / 8), (16u32, 8u32)), w, &mut m).map_err(|e| e.to_string())?;
    for r in 0..h {
        for c in 0..w {
            let v = m[(r * w + c) as usize];
            if v != r * 1000 + c {
                return Err(format!("2-D: m[{r}][{c}] = {v}"));
            }
        }
    }
    // grid-stride: 100003 elements, 8 blocks of 128 threads
    let len = 100_003usize;
    let x: Vec<f32> = (0..len).map(|i| (i % 17) as f32).collect();
    let threads = 8 * 128;
    let mut sums = vec![0f32; threads];
    stride_sums(LaunchConfig::new(8u32, 128u32), &x, &mut sums).map_err(|e| e.to_string())?;
    for (t, &s) in sums.iter().enumerate() {
        let want: f64 = (t..len).step_by(threads).map(|i| (i % 17) as f64).sum();
        if s as f64 != want {
            return Err(format!("grid-stride: thread {t} summed {s}, expected {want}"));
        }
    }
    let total: f64 = sums.iter().map(|&s| s as f64).sum();
    Ok(format!("3-D 3x2x4 of 4x3x2 ok, 2-D 64x48 ok, grid-stride total {total}"))
}
