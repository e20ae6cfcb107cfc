//! Tutorial 13: a 2-D image, owned by its coordinates.
//!
//!     cargo offload run --release -p blur [-- <width> <height>]     (1000 × 750 by default; 3840 2160 on a GPU)
//!
//! A 3×3 Gaussian blur of a grayscale image, `w × h` pixels stored row-major
//! (pixel `(x, y)` at `y·w + x`). One GPU thread per pixel, in 16×16 blocks:
//! the grid is `ceil(w / 16) × ceil(h / 16)` blocks, so it is a little wider
//! and taller than the image (1008 × 752 threads for 1000 × 750 pixels), and
//! the threads past the right and bottom edges have no pixel. In CUDA:
//!
//! ```c
//! int x = blockIdx.x * blockDim.x + threadIdx.x, y = …;
//! if (x < w && y < h) out[y * w + x] = …;
//! ```
//!
//! A `&mut [T]` parameter is a `DisjointSlice` in the kernel, and each thread
//! may write only the elements it owns. Plain `DisjointSlice`s give element
//! `i` to the thread whose `global_index()` is `i`, which counts threads
//! row by row *of the grid* (1008 per row here), not of the image: for a
//! grid wider than the image the thread at `(x, y)` does not own pixel
//! `y·w + x`, and `get_mut` would panic in a debug build (`None` in a release
//! one).
//!
//! `#[kernel(shape(out = (w, h)))]` declares that `out` holds a `w × h`
//! array, x first. The kernel then gets a `DisjointSlice2d`, whose pixel
//! `(x, y)` belongs to the thread at `global_thread_idx() = (x, y)`:
//!
//! - `out.at_thread()`: `Some(([x, y], &mut pixel))` for a thread inside the
//!   image, `None` outside: the `if (x < w && y < h)`, with no `unsafe`;
//! - `out.grid_stride()`: every pixel the thread owns, for a grid smaller
//!   than the image (pixel `(x, y)` belongs to thread `(x mod X, y mod Y)`
//!   of a grid of `X × Y` threads);
//! - `out.get_mut([x, y])`: an owned pixel by coordinates.
//!
//! `w` and `h` are by-value parameters, so every thread sees the same ones;
//! the launcher checks that `w · h` is the length of `out` and returns
//! `Error::InvalidLaunch` otherwise. Reading is not restricted: `img` is a
//! `&[f32]`, and each thread reads its pixel's 3×3 neighbourhood from it
//! (clamped at the borders).
//!
//! Every pixel is checked against the same blur computed on the host in f64
//! (absolute error below 1e-6, pixels are in [0, 1]); the program exits
//! non-zero otherwise.

use offload::{kernel, LaunchConfig};

/// The side of a block.
const BLOCK: u32 = 16;

/// The 3×3 Gaussian weights, row by row; they sum to 16.
const WEIGHTS: [[f32; 3]; 3] = [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]];

/// `out` = `img` blurred; both `w × h`, row-major.
#[kernel(shape(out = (w, h)), same_len(img, out))]
fn blur(w: u32, h: u32, img: &[f32], out: &mut [f32]) {
    // Inside the image only: threads past its edges get `None`.
    if let Some(([x, y], px)) = out.at_thread() {
        let (w, h) = (w as usize, h as usize);
        let mut sum = 0.0f32;
        for (dy, row) in WEIGHTS.iter().enumerate() {
            // Rows y-1, y, y+1, clamped to the image.
            let yy = (y + dy).saturating_sub(1).min(h - 1);
            for (dx, weight) in row.iter().enumerate() {
                let xx = (x + dx).saturating_sub(1).min(w - 1);
                sum += weight * img[yy * w + xx];
            }
        }
        *px = sum / 16.0;
    }
}

/// The input: gradients and a pattern of stripes, in [0, 1].
#[offload::host]
fn image(w: usize, h: usize) -> Vec<f32> {
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let stripes = ((x * 7 + y * 3) % 17) as f32 / 16.0;
            0.5 * stripes + 0.25 * (x as f32 / w as f32) + 0.25 * (y as f32 / h as f32)
        })
        .collect()
}

/// The blur of pixel `(x, y)`, computed on the host in f64.
#[offload::host]
fn reference(img: &[f32], w: usize, h: usize, x: usize, y: usize) -> f64 {
    let mut sum = 0.0f64;
    for (dy, row) in WEIGHTS.iter().enumerate() {
        for (dx, &weight) in row.iter().enumerate() {
            let yy = (y as i64 + dy as i64 - 1).clamp(0, h as i64 - 1) as usize;
            let xx = (x as i64 + dx as i64 - 1).clamp(0, w as i64 - 1) as usize;
            sum += weight as f64 * img[yy * w + xx] as f64;
        }
    }
    sum / 16.0
}

#[offload::host]
fn main() -> Result<(), offload::Error> {
    let args: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().unwrap_or(0)).collect();
    let (w, h) = match args[..] {
        [] => (1000, 750),
        [w, h] if (1..=1 << 15).contains(&w) && (1..=1 << 15).contains(&h) => (w, h),
        _ => {
            eprintln!("usage: blur [width height], each from 1 to 32768 (default 1000 750)");
            std::process::exit(2);
        }
    };
    println!("offload backend: {}", offload::backend()?);
    let img = image(w, h);
    // NaN everywhere, so a pixel that no thread wrote fails the check.
    let mut out = vec![f32::NAN; w * h];
    let grid = ((w as u32).div_ceil(BLOCK), (h as u32).div_ceil(BLOCK));
    let t = std::time::Instant::now();
    blur(LaunchConfig::new(grid, (BLOCK, BLOCK)), w as u32, h as u32, &img, &mut out)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;

    let mut worst = 0f64;
    let mut bad = 0usize;
    for (i, &px) in out.iter().enumerate() {
        let err = (px as f64 - reference(&img, w, h, i % w, i / w)).abs();
        // A pixel no thread wrote is NaN, and counts as bad.
        if err.is_nan() || err > 1e-6 {
            bad += 1;
        }
        worst = worst.max(err);
    }
    let checksum: f64 = out.iter().map(|&v| v as f64).sum();
    println!(
        "blur: {w} × {h} pixels, {} × {} blocks of {BLOCK} × {BLOCK} threads ({} × {}), {ms:.1} ms incl. \
         transfers, checksum {checksum:.4}, worst error {worst:.2e}",
        grid.0,
        grid.1,
        grid.0 * BLOCK,
        grid.1 * BLOCK
    );
    if bad > 0 {
        eprintln!("error: {bad} of {} pixels differ from the host's blur by more than 1e-6", w * h);
        std::process::exit(1);
    }
    println!("all results match the host reference");
    Ok(())
}
