//! Runtime semantics, written once for every backend: under plain
//! `cargo test` the kernels run on the host fallback; under
//! `cargo offload test` on a machine with a GPU they run on the GPU. Every
//! output is compared with values computed here on the host.

use offload::prelude::*;
#[offload::host]
use offload::Error;

/// Each thread records its global index, thread and block index.
#[kernel]
fn geometry(gidx: &mut [u64], tid: &mut [[u32; 3]], bid: &mut [[u32; 3]]) {
    let g = offload::global_index();
    let t = offload::thread_idx();
    let b = offload::block_idx();
    if let Some(s) = gidx.get_mut(g) {
        *s = g as u64;
    }
    if let Some(s) = tid.get_mut(g) {
        *s = [t.x, t.y, t.z];
    }
    if let Some(s) = bid.get_mut(g) {
        *s = [b.x, b.y, b.z];
    }
}

#[test]
fn three_dimensional_geometry_matches_cuda_numbering() {
    let grid = Dim3::new(3, 2, 2);
    let block = Dim3::new(4, 2, 2);
    let n = (grid.volume() * block.volume()) as usize;
    let mut gidx = vec![u64::MAX; n];
    let mut tid = vec![[u32::MAX; 3]; n];
    let mut bid = vec![[u32::MAX; 3]; n];
    geometry(LaunchConfig::new(grid, block), &mut gidx, &mut tid, &mut bid).unwrap();
    assert_eq!(gidx, (0..n as u64).collect::<Vec<_>>(), "every thread wrote its own global index");
    // Independent numbering: the thread at global position (x, y, z) of a
    // grid of X×Y×Z threads has index x + X·(y + Y·z) (row-major, x fastest).
    let (gx, gy) = ((grid.x * block.x) as usize, (grid.y * block.y) as usize);
    for bz in 0..grid.z {
        for by in 0..grid.y {
            for bx in 0..grid.x {
                for tz in 0..block.z {
                    for ty in 0..block.y {
                        for tx in 0..block.x {
                            let (x, y, z) = (
                                (bx * block.x + tx) as usize,
                                (by * block.y + ty) as usize,
                                (bz * block.z + tz) as usize,
                            );
                            let g = x + gx * (y + gy * z);
                            assert_eq!(tid[g], [tx, ty, tz], "thread {g}");
                            assert_eq!(bid[g], [bx, by, bz], "thread {g}");
                        }
                    }
                }
            }
        }
    }
}

/// One element per thread.
#[kernel]
fn iota_plus(k: u32, out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        *o = i as u32 + k;
    }
}

#[test]
fn at_thread_with_more_threads_than_elements() {
    let mut v = vec![0u32; 1000];
    iota_plus(offload::for_len(1000), 7, &mut v).unwrap();
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32 + 7));
    // 2-D launch: the linear global index still covers the slice.
    let mut w = vec![0u32; 6 * 8 * 32];
    iota_plus(LaunchConfig::new((6u32, 8u32), 32u32), 1, &mut w).unwrap();
    assert!(w.iter().enumerate().all(|(i, &x)| x == i as u32 + 1));
}

/// Grid-stride loop: few threads, many elements.
#[kernel]
fn square_all(x: &[f64], out: &mut [f64]) {
    for (i, o) in out.grid_stride() {
        *o = x[i] * x[i];
    }
}

#[test]
fn grid_stride_covers_every_element_once() {
    let n = 100_003;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.25).collect();
    let mut out = vec![f64::NAN; n];
    square_all(LaunchConfig::new(3u32, 64u32), &x, &mut out).unwrap();
    for i in 0..n {
        assert_eq!(out[i], (i as f64 * 0.25).powi(2), "out[{i}]");
    }
}

/// A `#[repr(C)]` struct by value, a `&T` and a `&mut T`.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(C)]
struct Affine {
    scale: f32,
    shift: f64,
    tag: u8,
}

#[kernel]
fn apply(p: Affine, bias: &f64, x: &[f32], out: &mut [f64], count: &mut u32) {
    if let Some((i, o)) = out.at_thread() {
        *o = p.scale as f64 * x[i] as f64 + p.shift + *bias + p.tag as f64;
    }
    // The one element of `count` belongs to global thread 0.
    if let Some(c) = count.get_mut_if_owned(0) {
        *c += 1;
    }
}

#[test]
fn struct_by_value_and_references() {
    let p = Affine { scale: 2.0, shift: -1.5, tag: 3 };
    let x: Vec<f32> = (0..777).map(|i| i as f32).collect();
    let mut out = vec![0f64; 777];
    let mut count = 41u32;
    apply(offload::for_len(777), p, &0.25, &x, &mut out, &mut count).unwrap();
    for i in 0..777 {
        assert_eq!(out[i], 2.0 * i as f64 - 1.5 + 0.25 + 3.0);
    }
    assert_eq!(count, 42, "exactly one thread owns the &mut u32");
}

#[test]
fn resident_buffers_stay_on_the_device() {
    let n = 4096;
    let x: Vec<f64> = (0..n).map(|i| (i % 17) as f64).collect();
    let xd = DeviceBuffer::from_slice(&x).unwrap();
    let mut yd = DeviceBuffer::<f64>::zeroed(n).unwrap();
    assert_eq!(yd.to_vec().unwrap(), vec![0.0; n], "zeroed");
    square_all(offload::for_len(n), &xd, &mut yd).unwrap();
    let y = yd.to_vec().unwrap();
    assert!(y.iter().zip(&x).all(|(y, x)| *y == x * x));
    // Mixed: resident input, host output.
    let mut host_out = vec![0.0; n];
    square_all(offload::for_len(n), &xd, &mut host_out).unwrap();
    assert_eq!(host_out, y);
    // Copy in and out.
    let mut back = vec![0.0; n];
    yd.copy_from_slice(&x).unwrap();
    yd.copy_to_slice(&mut back).unwrap();
    assert_eq!(back, x);
}

#[test]
fn buffer_length_mismatch_is_an_error_not_a_panic() {
    let mut b = DeviceBuffer::<u32>::zeroed(4).unwrap();
    let e = b.copy_from_slice(&[1, 2, 3]).unwrap_err();
    assert_eq!(e.to_string(), "cannot copy into a DeviceBuffer: the buffer has 4 elements but the slice has 3");
    let mut small = [0u32; 2];
    let e = b.copy_to_slice(&mut small).unwrap_err();
    assert!(matches!(e, Error::Memory { .. }), "{e}");
    assert!(DeviceBuffer::<u8>::zeroed(0).unwrap().to_vec().unwrap().is_empty());
    // More than any allocation can hold: an error naming the size (on a
    // GPU, the driver's out-of-memory error).
    let e = DeviceBuffer::<u8>::zeroed(isize::MAX as usize).unwrap_err();
    if offload::backend().unwrap().kind == offload::BackendKind::Host {
        assert_eq!(
            e.to_string(),
            format!(
                "cannot allocate: {} bytes is more than one allocation can hold (isize::MAX rounded to 256)",
                isize::MAX
            )
        );
    }
}

#[test]
fn invalid_launches_are_errors_naming_the_kernel() {
    let mut v = vec![0u32; 8];
    let e = iota_plus(LaunchConfig::new(1u32, 2048u32), 0, &mut v).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid launch of kernel `runtime::iota_plus`: block 2048x1x1 exceeds the per-dimension limits 1024x1024x64"
    );
    let e = iota_plus(LaunchConfig::new(1u32, (32u32, 32u32, 2u32)), 0, &mut v).unwrap_err();
    assert!(e.to_string().contains("has 2048 threads; the limit is 1024 per block"), "{e}");
    let e = iota_plus(LaunchConfig::new((1u32, 70000u32), 1u32), 0, &mut v).unwrap_err();
    assert!(e.to_string().contains("grid 1x70000x1 exceeds"), "{e}");
    // An empty grid launches nothing.
    iota_plus(offload::for_len(0), 5, &mut v).unwrap();
    assert_eq!(v, vec![0; 8]);
    // Empty slices are fine.
    let mut empty: Vec<u32> = Vec::new();
    iota_plus(offload::for_len(1), 5, &mut empty).unwrap();
}

/// Panics in thread 77 of the launch.
#[kernel]
fn fails_at(bad: usize, x: &[u32], out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        assert!(i != bad, "element {} is bad", i);
        *o = x[i] + 1;
    }
}

/// `x` of a block or thread index `(x, 0, 0)`.
#[offload::host]
fn x_of(index: &str) -> u32 {
    index
        .strip_prefix('(')
        .and_then(|r| r.split(',').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{index}"))
}

/// On both backends (on the GPU through the blocking launch's panic
/// record): the panic's kernel, message, location, block and thread; with
/// many threads panicking at once, one consistent report; then the next
/// launch works.
#[test]
fn a_panicking_kernel_reports_and_the_next_launch_works() {
    let x: Vec<u32> = (0..300).collect();
    let mut out = vec![0u32; 300];
    let e = fails_at(LaunchConfig::new(3u32, 100u32), 177, &x, &mut out).unwrap_err();
    match &e {
        Error::KernelPanic(p) => {
            let offload::error::KernelPanic { kernel, message, location, block, thread } = &**p;
            assert_eq!(kernel, "runtime::fails_at");
            // Formatted on every backend and profile: the kernel body's `panic!`
            // arguments are recorded as values on the GPU (docs/device-model.md, "Panics").
            assert_eq!(message, "element 177 is bad");
            assert!(location.starts_with(&format!("{}:", file!())), "{location}");
            assert_eq!(block, "(1, 0, 0)");
            assert_eq!(thread, "(77, 0, 0)");
        }
        other => panic!("{other}"),
    }
    // Out of bounds: `x` is shorter than `out`, so threads 10 to 299 all
    // panic. Which one reports depends on scheduling; its report names its
    // own index, in its block and thread and (formatted, by the host from
    // the values the GPU recorded, in every profile) in its message.
    let short: Vec<u32> = (0..10).collect();
    let cfg = offload::for_len(300);
    let e = fails_at(cfg, usize::MAX, &short, &mut out).unwrap_err();
    let Error::KernelPanic(p) = &e else { panic!("{e}") };
    let offload::error::KernelPanic { kernel, message, block, thread, .. } = &**p;
    assert_eq!(kernel, "runtime::fails_at");
    let idx = x_of(block) * cfg.block.x + x_of(thread);
    assert!((10..300).contains(&idx), "{e}");
    assert_eq!(*message, format!("index out of bounds: the len is 10 but the index is {idx}"), "{e}");
    // And the runtime keeps working.
    fails_at(offload::for_len(300), usize::MAX, &x, &mut out).unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32 + 1));
}

/// Every thread writes 7 into its element, except thread `at`, which
/// panics first.
#[kernel]
fn sevens_but(at: usize, v: &mut [u32]) {
    if let Some((i, o)) = v.at_thread() {
        assert!(i != at, "thread {} panics", i);
        *o = 7;
    }
}

/// Checks one launch of `sevens_but` over 4096 elements for each panic
/// position (first, a middle and the last block): the kernel reports the
/// panicking thread, and every other thread finished (all elements 7 but
/// that one).
#[offload::host]
fn check_sevens_but() {
    let cfg = offload::for_len(4096);
    for at in [0usize, 17, 300, 2100, 4095] {
        let mut v = vec![0u32; 4096];
        let e = sevens_but(cfg, at, &mut v).unwrap_err();
        let Error::KernelPanic(p) = &e else { panic!("at {at}: {e}") };
        assert_eq!(p.message, format!("thread {at} panics"), "{e}");
        let b = cfg.block.x as usize;
        assert_eq!(
            (p.block.as_str(), p.thread.as_str()),
            (&*format!("({}, 0, 0)", at / b), &*format!("({}, 0, 0)", at % b))
        );
        let unwritten: Vec<usize> = (0..v.len()).filter(|&i| v[i] != 7).collect();
        let first: Vec<_> = unwritten.iter().take(8).collect();
        assert_eq!(unwritten.len(), 1, "at {at}: {} elements are not 7, the first {first:?}", unwritten.len());
        assert_eq!((unwritten[0], v[at]), (at, 0), "at {at}: only the panicking thread's element is not 7");
    }
}

/// The GPU thread that panics stops; every other thread of its block and
/// of the grid finishes (docs/device-model.md, "Panics"). On the host
/// fallback also with 1 and 2 workers (children with
/// `OFFLOAD_HOST_THREADS`): it used to leave the rest of the launch undone,
/// how much depending on the number of workers.
#[test]
fn a_panicking_thread_stops_and_the_other_threads_finish() {
    check_sevens_but();
    if std::env::var("OFFLOAD_RUNTIME_TEST_CHILD").is_err()
        && offload::backend().unwrap().kind == offload::BackendKind::Host
    {
        let test = "a_panicking_thread_stops_and_the_other_threads_finish";
        for threads in ["1", "2"] {
            let limit = std::time::Duration::from_secs(120);
            let (status, stderr) = child(test, "workers", limit, &[("OFFLOAD_HOST_THREADS", threads)], None);
            assert!(status.is_some_and(|s| s.success()), "OFFLOAD_HOST_THREADS={threads}: {status:?}\n{stderr}");
        }
    }
}

/// Thread `t` of each block of 64 stores its global index + 1 in shared
/// memory, waits at a barrier, and writes the value of thread `63 - t` into
/// its element. Global thread `at` panics before the barrier (`after`
/// false) or after it.
#[kernel]
fn mirror_but(at: u32, after: bool, out: &mut [u32]) {
    let s = offload::shared_array!(u32; 64);
    let (t, n) = (offload::thread_idx().x, offload::block_dim().x);
    let me = offload::block_idx().x * n + t;
    assert!(after || me != at, "thread {} panics before the barrier", me);
    s.set(t as usize, me + 1);
    offload::sync_threads();
    assert!(!after || me != at, "thread {} panics after the barrier", me);
    let v = s.get((n - 1 - t) as usize);
    offload::sync_threads();
    if let Some(o) = out.get_mut(me as usize) {
        *o = v;
    }
}

/// A thread that panics before or between barriers stops; the barriers then
/// wait for the live threads only (as on sm_70 and later, where an exited
/// thread no longer takes part in `bar.sync`), and every other thread
/// finishes. Before the barrier, the panicking thread's partner reads a
/// value nobody wrote: that element is left unchecked.
#[test]
fn a_thread_that_panics_near_a_barrier_stops_and_the_block_finishes() {
    let (grid, block) = (3u32, 64u32);
    for (at, after) in [(70u32, false), (5, true), (191, false), (128, true)] {
        let mut out = vec![u32::MAX; (grid * block) as usize];
        let e = mirror_but(LaunchConfig::new(grid, block), at, after, &mut out).unwrap_err();
        let Error::KernelPanic(p) = &e else { panic!("{e}") };
        let when = if after { "after" } else { "before" };
        assert_eq!(p.message, format!("thread {at} panics {when} the barrier"), "{e}");
        assert_eq!(
            (p.block.as_str(), p.thread.as_str()),
            (&*format!("({}, 0, 0)", at / block), &*format!("({}, 0, 0)", at % block))
        );
        let partner = at / block * block + (block - 1 - at % block);
        for (i, &v) in out.iter().enumerate() {
            let i = i as u32;
            let want = i / block * block + (block - 1 - i % block) + 1;
            if i == at {
                assert_eq!(v, u32::MAX, "{at} {when}: the panicking thread wrote its element");
            } else if after || i != partner {
                assert_eq!(v, want, "{at} {when}: element {i}");
            }
        }
    }
}

/// Lanes 5 and 21 hold 2^31: the first step of the warp's butterfly
/// (offset 16) adds the two, which overflows in lanes 5 and 21 only (with
/// overflow checks: a debug build, offload's code included).
#[cfg(debug_assertions)]
#[kernel]
fn reduce_overflows(out: &mut [u32]) {
    let lane = offload::warp::lane_id();
    let s = offload::warp::reduce_sum(if lane % 16 == 5 { 1u32 << 31 } else { 1 });
    if let Some((_, o)) = out.at_thread() {
        *o = s;
    }
}

/// A panic in a warp reduction is the panic of a lane whose step panics
/// (the host fallback computes a reduction that the whole warp makes in
/// one meeting, but not a panicking one: it then goes shuffle by shuffle).
#[cfg(debug_assertions)]
#[test]
fn an_overflow_in_a_warp_reduction_panics_in_a_lane_whose_step_overflows() {
    let mut out = vec![0u32; 32];
    let e = reduce_overflows(LaunchConfig::new(1u32, 32u32), &mut out).unwrap_err();
    let Error::KernelPanic(p) = &e else { panic!("{e}") };
    assert!(p.message.contains("attempt to add with overflow"), "{e}");
    assert!(["(5, 0, 0)", "(21, 0, 0)"].contains(&p.thread.as_str()), "{e}");
}

/// Counts, in `out[0]`, the elements of both inputs (their lengths reach the
/// kernel; empty slices arrive as valid empty slices).
#[kernel]
fn lengths(a: &[f32], b: &[u8], r: &f64, out: &mut [u64]) {
    if let Some((_, o)) = out.at_thread() {
        *o = a.len() as u64 * 1000 + b.len() as u64 + *r as u64 * 1_000_000;
        if let (Some(x), Some(y)) = (a.first(), b.last()) {
            *o += (*x as u64 + *y as u64) * 1_000_000_000;
        }
    }
}

#[test]
fn empty_and_nonempty_read_only_slices() {
    let mut out = [0u64; 1];
    let empty_vec: Vec<f32> = Vec::new();
    lengths(LaunchConfig::new(1u32, 1u32), &empty_vec, &[] as &[u8], &2.0, &mut out).unwrap();
    assert_eq!(out[0], 2_000_000);
    let ed = DeviceBuffer::<f32>::zeroed(0).unwrap();
    let bd = DeviceBuffer::from_slice(&[1u8, 2, 3]).unwrap();
    lengths(LaunchConfig::new(1u32, 1u32), &ed, &bd, &0.0, &mut out).unwrap();
    assert_eq!(out[0], 3);
    lengths(LaunchConfig::new(1u32, 1u32), &[5.0f32, 6.0], &bd, &1.0, &mut out).unwrap();
    assert_eq!(out[0], 8 * 1_000_000_000 + 1_000_000 + 2003);
}

#[test]
fn pinned_buffers_copy_and_map_like_host_memory() {
    let n = 10_000;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let pinned = offload::PinnedBuffer::from_slice(&x).unwrap();
    assert_eq!(&pinned[..], &x[..]);
    let dev = DeviceBuffer::from_slice(&pinned).unwrap();
    let mut back = offload::PinnedBuffer::<f64>::zeroed(n).unwrap();
    assert!(back.iter().all(|&v| v == 0.0));
    dev.copy_to_slice(&mut back).unwrap();
    assert_eq!(&back[..], &x[..]);
    // As kernel arguments: copied for the launch like a Vec.
    square_all(offload::for_len(n), &pinned, &mut back).unwrap();
    assert!(back.iter().zip(&x).all(|(y, x)| *y == x * x));
    assert!(offload::PinnedBuffer::<u32>::zeroed(0).unwrap().is_empty());
}

#[test]
fn mapped_pinned_buffers_are_read_and_written_in_place() {
    let n = 5_000;
    let x: Vec<f64> = (0..n).map(|i| (i as f64).sqrt() - 20.0).collect();
    let input = offload::PinnedBuffer::from_slice(&x).unwrap();
    let mut out = offload::PinnedBuffer::<f64>::zeroed(n).unwrap();
    // Both directions mapped: the kernel reads and writes host memory.
    square_all(offload::for_len(n), &input.mapped(), &mut out.mapped_mut()).unwrap();
    assert!(out.iter().zip(&x).all(|(y, x)| *y == x * x), "mapped in, mapped out");
    // Mixed with a resident input and a plain slice.
    let dev = DeviceBuffer::from_slice(&x[..n / 2]).unwrap();
    let mut half = offload::PinnedBuffer::<f64>::zeroed(n / 2).unwrap();
    square_all(offload::for_len(n / 2), &dev, &mut half.mapped_mut()).unwrap();
    assert!(half.iter().zip(&x).all(|(y, x)| *y == x * x), "resident in, mapped out");
    let mut plain = vec![0.0f64; n];
    square_all(offload::for_len(n), &input.mapped(), &mut plain).unwrap();
    assert!(plain.iter().zip(&x).all(|(y, x)| *y == x * x), "mapped in, mapped Vec out");
    // Empty buffers pass a dangling, aligned pointer that no thread reads.
    let mut empty = offload::PinnedBuffer::<f64>::zeroed(0).unwrap();
    square_all(offload::for_len(1), &empty.mapped(), &mut plain[..0]).unwrap();
    square_all(offload::for_len(1), &input.mapped(), &mut empty.mapped_mut()).unwrap();
}

#[kernel]
fn trig(x: &[f32], out: &mut [[f32; 3]]) {
    for (i, o) in out.grid_stride() {
        *o = [offload::math::sin(x[i]), offload::math::cos(x[i]), offload::math::sqrt(x[i])];
    }
}

#[test]
fn math_functions_match_the_host() {
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.01).collect();
    let mut out = vec![[0f32; 3]; x.len()];
    trig(offload::for_len(x.len()), &x, &mut out).unwrap();
    for (v, o) in x.iter().zip(&out) {
        let want = [(*v as f64).sin(), (*v as f64).cos(), (*v as f64).sqrt()];
        for k in 0..3 {
            // Exact builds: < 1 ulp plus the f32 rounding of the argument.
            assert!(
                (o[k] as f64 - want[k]).abs() <= 2e-7 * want[k].abs().max(1.0),
                "{k} of {v}: {} vs {}",
                o[k],
                want[k]
            );
        }
    }
}

/// The CUDA backend stages copies of pageable memory of at least
/// `STAGING_THRESHOLD_BYTES` (4 MiB) through pinned buffers of
/// `STAGING_CHUNK_BYTES` (32 MiB) each (`runtime/cuda/staging.rs`, whose
/// unit test keeps these numbers in step); these sizes, in bytes, sit on
/// both sides of each boundary.
#[offload::host]
static STAGED_SIZES: [usize; 10] = {
    const T: usize = 4 << 20;
    const C: usize = 32 << 20;
    [0, 1, T - 1, T, T + 1, C - 1, C, C + 3, 2 * C + 5, 3 * C + 1]
};

/// The sizes of [`STAGED_SIZES`] that mean something on the backend the
/// tests run on: all of them on CUDA; on the host fallback, which has no
/// staging buffers and copies with one `memcpy` at any size, those up to
/// the threshold (the larger ones took most of the unoptimized suite's
/// time there and test nothing more).
#[offload::host]
fn staged_sizes() -> &'static [usize] {
    match offload::backend().unwrap().kind {
        offload::BackendKind::Host => &STAGED_SIZES[..5],
        _ => &STAGED_SIZES,
    }
}

/// A value that differs from element to element (and between seeds).
#[offload::host]
fn mixed(i: usize, seed: u64) -> u64 {
    let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` bytes of `mixed` words (each byte inverted if `invert`), one hash
/// per 8 bytes to keep debug builds quick.
#[offload::host]
fn mixed_bytes(n: usize, seed: u64, invert: bool) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    for w in 0..n.div_ceil(8) {
        let x = mixed(w, seed);
        v.extend_from_slice(&if invert { !x } else { x }.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// `n` `u32`s of `mixed` words (each inverted if `invert`).
#[offload::host]
fn mixed_u32s(n: usize, seed: u64, invert: bool) -> Vec<u32> {
    let mut v = Vec::with_capacity(n + 2);
    for w in 0..n.div_ceil(2) {
        let x = if invert { !mixed(w, seed) } else { mixed(w, seed) };
        v.push(x as u32);
        v.push((x >> 32) as u32);
    }
    v.truncate(n);
    v
}

/// Panics naming the first element where `got` and `want` differ.
#[offload::host]
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if got != want {
        let i = (0..got.len()).find(|&i| got[i] != want[i]).unwrap();
        panic!("{what}: element {i} of {} is {:?}, expected {:?}", got.len(), got[i], want[i]);
    }
}

/// Round-trips `data` through a new `DeviceBuffer`: `to_vec` of the zeroed
/// buffer (which the previous, nonzero copy through the same staging
/// buffers must not leak into), `copy_from_slice`, `copy_to_slice` into
/// `inverse` (every element differs from `data`'s), `to_vec`.
#[offload::host]
fn round_trip<T: DeviceCopy + Default + PartialEq + std::fmt::Debug>(data: &[T], mut inverse: Vec<T>, what: &str) {
    let len = data.len();
    let mut dev = DeviceBuffer::<T>::zeroed(len).unwrap();
    same(&dev.to_vec().unwrap(), &vec![T::default(); len], &format!("{what}, {len} elements: zeroed, to_vec"));
    dev.copy_from_slice(data).unwrap();
    dev.copy_to_slice(&mut inverse).unwrap();
    same(&inverse, data, &format!("{what}, {len} elements: copy_from_slice, copy_to_slice"));
    drop(inverse);
    same(&dev.to_vec().unwrap(), data, &format!("{what}, {len} elements: to_vec"));
}

#[test]
fn copies_round_trip_at_the_staging_boundaries() {
    for &bytes in staged_sizes() {
        let seed = bytes as u64;
        round_trip::<u8>(&mixed_bytes(bytes, seed, false), mixed_bytes(bytes, seed, true), "u8");
        let n = bytes / 4;
        round_trip::<u32>(&mixed_u32s(n, !seed, false), mixed_u32s(n, !seed, true), "u32");
    }
    // A length mismatch is an error at staging sizes too, and copies nothing.
    let n = (4 << 20) + 1;
    let mut dev = DeviceBuffer::<u8>::zeroed(n).unwrap();
    assert!(matches!(dev.copy_from_slice(&vec![7u8; n + 1]), Err(Error::Memory { .. })));
    assert!(matches!(dev.copy_to_slice(&mut vec![0u8; n - 1]), Err(Error::Memory { .. })));
    same(&dev.to_vec().unwrap(), &vec![0u8; n], "after the failed copies");
}

#[test]
fn large_mapped_arguments_go_to_the_device_and_back() {
    // 2 chunks and a bit of `u32`s, read (`x`) and written back (`out`);
    // on the host fallback (no staging), past the staging threshold.
    let bytes = match offload::backend().unwrap().kind {
        offload::BackendKind::Host => (4 << 20) + 4096,
        _ => 2 * (32 << 20) + 4096,
    };
    let n = bytes / 4 + 1;
    // `out` goes up through the staging buffers after `x`; the kernel's
    // results must come back, not what the buffers still hold.
    let x: Vec<u32> = mixed_u32s(n, 3, false).iter().map(|&v| v >> 1).collect();
    let mut out = mixed_u32s(n, 4, false);
    fails_at(offload::for_len(n), usize::MAX, &x, &mut out).unwrap();
    let want: Vec<u32> = x.iter().map(|&v| v + 1).collect();
    same(&out, &want, "fails_at(x) = x + 1");
}

/// `out[i] = a·x[i] + y[i]`, the three slices declared equal in length:
/// the indexing needs no bounds check in the kernel.
#[kernel(same_len(x, y, out))]
fn same_len_axpy(a: f64, x: &[f64], y: &[f64], out: &mut [f64]) {
    for (i, o) in out.grid_stride() {
        *o = a * x[i] + y[i];
    }
}

#[test]
fn same_len_is_checked_by_the_launcher() {
    let n = 5_003;
    let x: Vec<f64> = (0..n).map(|i| (i as f64).sqrt()).collect();
    let y: Vec<f64> = (0..n).map(|i| 1.0 - i as f64).collect();
    let mut out = vec![0.0f64; n];
    same_len_axpy(LaunchConfig::new(3u32, 96u32), 2.0, &x, &y, &mut out).unwrap();
    assert!((0..n).all(|i| out[i] == 2.0 * x[i] + y[i]));
    // Resident and host slices mixed.
    let xd = DeviceBuffer::from_slice(&x).unwrap();
    let mut out2 = vec![0.0f64; n];
    same_len_axpy(offload::for_len(n), 2.0, &xd, &y, &mut out2).unwrap();
    assert_eq!(out2, out);
    // A length that differs is an error before anything runs; `out` keeps
    // its values.
    let mut short = vec![7.0f64; n - 1];
    let e = same_len_axpy(offload::for_len(n), 2.0, &x, &y, &mut short).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid launch of kernel `runtime::same_len_axpy`: the kernel declares `same_len(x, y, out)`, \
         but `x` has 5003 elements and `out` has 5002"
    );
    assert!(short.iter().all(|&v| v == 7.0));
    let e = same_len_axpy(offload::for_len(n), 2.0, &x, &y[1..], &mut out).unwrap_err();
    assert!(e.to_string().contains("`x` has 5003 elements and `y` has 5002"), "{e}");
    // All empty is fine.
    same_len_axpy(offload::for_len(1), 2.0, &x[..0], &y[..0], &mut []).unwrap();
}

/// `sync_threads` inside a function that a kernel calls: a barrier the
/// kernel macro does not see, at which the host fallback suspends each
/// thread on a coroutine stack of its own (a barrier of the body costs no
/// stack: `hostsim::phases`).
fn barrier_in_a_function() {
    offload::sync_threads();
}

/// A block (3-D or 1-D) whose threads meet at a barrier the kernel macro does not
/// see (so the host fallback runs the body in its plain loop over the
/// block's threads, row by row, and suspends each thread's runner there):
/// each thread publishes a value in shared memory, waits, and reads its
/// mirror's (linear index `n - 1 - t`); after the barrier each thread still
/// sees its own `threadIdx`. `runs` counts the times each thread started.
#[kernel]
fn mirror_across_block(runs: &[offload::atomic::AtomicU32], out: &mut [[u32; 4]]) {
    runs[offload::global_index()].fetch_add(1, offload::atomic::Ordering::Relaxed);
    let s = offload::shared_array!(u32; 64);
    let (t, d) = (offload::thread_idx(), offload::block_dim());
    let n = (d.x * d.y * d.z) as usize;
    let me = (t.x + d.x * (t.y + d.y * t.z)) as usize;
    s.set(me, me as u32 * 7 + 1000 * offload::block_idx().z + 100 * offload::block_idx().x);
    barrier_in_a_function();
    let after = offload::thread_idx();
    if let Some((_, o)) = out.at_thread() {
        *o = [s.get(n - 1 - me), after.x, after.y, after.z];
    }
}

#[test]
fn threads_meet_at_a_barrier_in_a_function_and_each_runs_once() {
    // 3-D and 1-D: the host fallback's two loops over a block's threads.
    for (grid, block) in [(Dim3::new(2, 1, 2), Dim3::new(4, 2, 3)), (Dim3::new(3, 1, 1), Dim3::new(40, 1, 1))] {
        let n = (grid.volume() * block.volume()) as usize;
        let mut out = vec![[u32::MAX; 4]; n];
        let runs: Vec<_> = (0..n).map(|_| offload::atomic::AtomicU32::new(0)).collect();
        mirror_across_block(LaunchConfig::new(grid, block), &runs, &mut out).unwrap();
        let runs: Vec<u32> = runs.iter().map(|r| r.load(offload::atomic::Ordering::Relaxed)).collect();
        assert_eq!(runs, vec![1; n], "each thread ran once ({block:?} threads per block)");
        let (gx, gy) = ((grid.x * block.x) as usize, (grid.y * block.y) as usize);
        let threads = block.volume() as usize;
        for (bz, bx) in (0..grid.z).flat_map(|bz| (0..grid.x).map(move |bx| (bz, bx))) {
            for (tz, ty, tx) in
                (0..block.z).flat_map(|z| (0..block.y).flat_map(move |y| (0..block.x).map(move |x| (z, y, x))))
            {
                let me = (tx + block.x * (ty + block.y * tz)) as usize;
                let (x, y, z) = ((bx * block.x + tx) as usize, ty as usize, (bz * block.z + tz) as usize);
                let mirror = (threads - 1 - me) as u32 * 7 + 1000 * bz + 100 * bx;
                assert_eq!(out[x + gx * (y + gy * z)], [mirror, tx, ty, tz], "block ({bx}, 0, {bz}), thread {me}");
            }
        }
    }
}

/// Every thread of a block fills its stripe of the block's whole dynamic
/// shared memory (as `u32`s) with values that depend on the block; after a
/// barrier (in a function: every thread waits on a stack of its own on the
/// host), thread 0 of the block reads every element back and stores the
/// sum in `out[block * block_dim]`.
#[kernel]
fn dynamic_shared_sum(seed: u32, out: &mut [u64]) {
    let s = offload::dynamic_shared::<u32>();
    let n = offload::block_dim().x as usize;
    let b = offload::block_idx().x;
    let mut i = offload::thread_idx().x as usize;
    while i < s.len() {
        s.set(i, (i as u32).wrapping_mul(2_654_435_761) ^ seed.wrapping_add(b));
        i += n;
    }
    barrier_in_a_function();
    if offload::thread_idx().x == 0 {
        let mut sum = 0u64;
        for i in 0..s.len() {
            sum += s.get(i) as u64;
        }
        if let Some(o) = out.get_mut(offload::global_index()) {
            *o = sum;
        }
    }
}

/// What `dynamic_shared_sum` computes for block `b`, here in plain Rust.
#[offload::host]
fn dynamic_shared_sum_on_host(bytes: u32, seed: u32, b: u32) -> u64 {
    (0..bytes as usize / 4).map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed.wrapping_add(b)) as u64).sum()
}

/// Dynamic shared memory above 48 KiB: the CUDA backend opts the kernel in
/// (up to the GPU's limit, 227 KiB on an H200); the host fallback applies
/// the limit of the binary's architecture. Beyond the limit: InvalidLaunch
/// naming request and limit, before anything runs, on both backends.
#[test]
fn dynamic_shared_memory_above_48_kib() {
    let limit = offload::backend().unwrap().shared_memory_per_block;
    assert!(limit >= 64 * 1024, "every supported GPU (sm_70+) allows 64 KiB: {limit}");
    let (grid, block) = (3u32, 128u32);
    for kib in [64u32, 200] {
        let bytes = kib * 1024;
        let cfg = LaunchConfig { shared_mem_bytes: bytes, ..LaunchConfig::new(grid, block) };
        let mut out = vec![u64::MAX; (grid * block) as usize];
        let r = dynamic_shared_sum(cfg, 99, &mut out);
        if bytes <= limit {
            r.unwrap_or_else(|e| panic!("{kib} KiB: {e}"));
            for b in 0..grid {
                assert_eq!(out[(b * block) as usize], dynamic_shared_sum_on_host(bytes, 99, b), "{kib} KiB, block {b}");
            }
            assert_eq!(out.iter().filter(|&&v| v == u64::MAX).count(), (grid * (block - 1)) as usize);
            println!("{kib} KiB of dynamic shared memory: ran, sums right");
        } else {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bytes} bytes of dynamic shared memory per block requested, but the limit is ")),
                "{e}"
            );
            assert!(out.iter().all(|&v| v == u64::MAX), "nothing ran");
            println!("{kib} KiB of dynamic shared memory: refused, the limit is {limit}");
        }
    }
    let mut out = vec![u64::MAX; (grid * block) as usize];
    let cfg = LaunchConfig { shared_mem_bytes: 1 << 20, ..LaunchConfig::new(grid, block) };
    let e = dynamic_shared_sum(cfg, 1, &mut out).unwrap_err();
    match &e {
        Error::InvalidLaunch(l) => {
            let offload::error::InvalidLaunch { kernel, reason } = &**l;
            assert_eq!(kernel, "runtime::dynamic_shared_sum");
            // This kernel has no static shared memory: its limit is the block's.
            let want =
                format!("1048576 bytes of dynamic shared memory per block requested, but the limit is {limit} bytes (");
            assert!(reason.starts_with(&want), "{reason}");
        }
        other => panic!("{other}"),
    }
    assert!(out.iter().all(|&v| v == u64::MAX), "nothing ran");
    // And the next launch works.
    let cfg = LaunchConfig { shared_mem_bytes: 4096, ..LaunchConfig::new(grid, block) };
    dynamic_shared_sum(cfg, 5, &mut out).unwrap();
    assert_eq!(out[block as usize], dynamic_shared_sum_on_host(4096, 5, 1));
}

/// 8 KiB of static shared memory next to the launch's dynamic shared
/// memory: thread `t` of each block stores `t` in the static array and `3t`
/// at the end of the dynamic one, then reads its neighbour's values.
#[kernel]
fn static_and_dynamic_shared(out: &mut [u32]) {
    let tile = offload::shared_array!(u32; 2048);
    let d = offload::dynamic_shared::<u32>();
    let t = offload::thread_idx().x as usize;
    let n = offload::block_dim().x as usize;
    let last = d.len() - n;
    tile.set(t, t as u32);
    d.set(last + t, 3 * t as u32);
    offload::sync_threads();
    let u = (t + 1) % n;
    if let Some(o) = out.get_mut(offload::global_index()) {
        *o = tile.get(u) + d.get(last + u);
    }
}

/// A kernel's static shared memory counts against the same per-block limit
/// on both backends: the error names the static bytes and what is left.
#[test]
fn static_shared_memory_counts_against_the_limit() {
    let limit = offload::backend().unwrap().shared_memory_per_block;
    let (grid, block) = (2u32, 64u32);
    let mut out = vec![0u32; (grid * block) as usize];
    let cfg = |bytes| LaunchConfig { shared_mem_bytes: bytes, ..LaunchConfig::new(grid, block) };
    let e = static_and_dynamic_shared(cfg(limit - 4096), &mut out).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{} bytes of dynamic shared memory per block requested, but the limit is {} bytes ({limit} bytes of shared memory per block, ",
            limit - 4096,
            limit - 8192
        )),
        "{e}"
    );
    assert!(e.contains("minus the kernel's 8192 bytes of static shared memory); request less"), "{e}");
    // What is left is usable.
    static_and_dynamic_shared(cfg(limit - 8192), &mut out).unwrap();
    let n = block as usize;
    assert!(out.iter().enumerate().all(|(g, &v)| v == 4 * ((g % n + 1) % n) as u32), "{:?}", &out[..8]);
}

/// A recursion `n` calls deep whose frames stay live across the call (the
/// array is used after it returns), so no optimizer turns it into a loop.
fn recurse(n: u32, seed: u64) -> u64 {
    if n == 0 {
        return seed;
    }
    let mut local = [0u64; 16];
    for (i, l) in local.iter_mut().enumerate() {
        *l = seed.wrapping_mul(i as u64 + n as u64) ^ (seed >> 7);
    }
    let r = recurse(n - 1, local[(n % 16) as usize] ^ seed);
    local.iter().fold(r, |a, &x| a.rotate_left(5) ^ x)
}

/// Each thread recurses `depth` calls deep.
#[kernel]
fn recursive(depth: u32, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = recurse(depth, i as u64 + 1);
    }
}

/// Mutual recursion: `ping` and `pong` call each other, each keeping a
/// local array live across the call.
fn ping(n: u32, seed: u64) -> u64 {
    if n == 0 {
        return seed;
    }
    let local = [seed, seed ^ n as u64, seed.rotate_left(n), seed.wrapping_add(3)];
    let r = pong(n - 1, local[(n % 4) as usize]);
    local.iter().fold(r, |a, &x| a.wrapping_mul(31) ^ x)
}

fn pong(n: u32, seed: u64) -> u64 {
    if n == 0 {
        return !seed;
    }
    let local = [seed.wrapping_mul(7), seed >> 3, seed ^ 0x55, n as u64];
    let r = ping(n - 1, local[(n % 4) as usize] ^ seed);
    local.iter().fold(r, |a, &x| a.rotate_right(3) ^ x)
}

#[kernel]
fn mutually_recursive(depth: u32, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = ping(depth, i as u64);
    }
}

/// The stack of each GPU thread and the `detail` of `Error::StackOverflow`
/// for a recursion in `function` on the backend in use: the GPU's
/// `CU_LIMIT_STACK_SIZE` (8 KiB unless `OFFLOAD_CUDA_STACK_BYTES` says
/// otherwise; the check names the function that would overflow), the host
/// fallback's coroutine stack (256 KiB unless `OFFLOAD_HOST_STACK_KIB`
/// says otherwise, at least 64; it cannot name the function).
#[offload::host]
fn stack_and_overflow_detail(function: &str) -> (usize, String) {
    let setting = |var: &str| std::env::var(var).ok().and_then(|v| v.trim().parse::<usize>().ok());
    match offload::backend().unwrap().kind {
        offload::BackendKind::Cuda => {
            let bytes = setting("OFFLOAD_CUDA_STACK_BYTES").unwrap_or(8192);
            let detail = format!(
                "the recursion in `{function}` would go past the end of the {bytes}-byte stack of each GPU thread \
                 (CU_LIMIT_STACK_SIZE); recurse less deeply, or raise OFFLOAD_CUDA_STACK_BYTES"
            );
            (bytes, detail)
        }
        _ => {
            let kib = setting("OFFLOAD_HOST_STACK_KIB").filter(|&k| k >= 64).unwrap_or(256);
            let detail = format!(
                "the host fallback's stack of {kib} KiB per simulated GPU thread is exhausted (recursion too deep?); \
                 recurse less deeply, or raise OFFLOAD_HOST_STACK_KIB"
            );
            (kib * 1024, detail)
        }
    }
}

/// `e` is the `Error::StackOverflow` of a launch of `kernel` on 2 blocks
/// of 32 threads, with one of the `details`.
#[offload::host]
fn assert_overflow(e: &Error, kernel: &str, details: &[String]) {
    match e {
        Error::StackOverflow(s) => {
            let offload::error::StackOverflow { kernel: k, block, thread, detail } = &**s;
            assert_eq!(k, kernel, "{e}");
            assert!(["(0, 0, 0)", "(1, 0, 0)"].contains(&block.as_str()), "{e}");
            assert!((0..32).any(|x| *thread == format!("({x}, 0, 0)")), "{e}");
            assert!(details.contains(detail), "{e}\nexpected one of {details:#?}");
        }
        other => panic!("expected a stack overflow of `{kernel}`, got: {other}"),
    }
}

/// Recursion too deep for a GPU thread's stack is `Error::StackOverflow`
/// (on the GPU: the check the device linker puts into recursive functions,
/// against the end of the stack the runtime measured; on the host
/// fallback: the guard page of the thread's stack), not an illegal address
/// or a killed process; and the next launch works. The deepest recursion
/// that runs fits the stack, and the check does not stop it much earlier.
#[test]
fn too_deep_recursion_is_an_error_and_the_next_launch_works() {
    let (stack, detail) = stack_and_overflow_detail("runtime::recurse");
    let cfg = LaunchConfig::new(2u32, 32u32);
    let want = |depth: u32| (0..64).map(|i| recurse(depth, i + 1)).collect::<Vec<u64>>();
    let mut out = vec![0u64; 64];
    recursive(cfg, 12, &mut out).unwrap();
    assert_eq!(out, want(12), "shallow recursion runs");
    let e = recursive(cfg, 50_000_000, &mut out).unwrap_err();
    assert_overflow(&e, "runtime::recursive", std::slice::from_ref(&detail));
    println!("deep recursion: {e}");
    let mut again = vec![0u64; 64];
    recursive(cfg, 12, &mut again).unwrap();
    assert_eq!(again, want(12), "the next launch works");
    iota_plus(offload::for_len(1000), 3, &mut vec![0u32; 1000]).unwrap();

    // Two functions recursing into each other: the same; on the GPU the
    // check of either may stop the thread.
    let mut out = vec![0u64; 64];
    mutually_recursive(cfg, 11, &mut out).unwrap();
    assert_eq!(out, (0..64).map(|i| ping(11, i)).collect::<Vec<_>>());
    let e = mutually_recursive(cfg, 50_000_000, &mut out).unwrap_err();
    let details = [stack_and_overflow_detail("runtime::ping").1, stack_and_overflow_detail("runtime::pong").1];
    assert_overflow(&e, "runtime::mutually_recursive", &details);
    println!("deep mutual recursion: {e}");
    let mut again = vec![0u64; 64];
    mutually_recursive(cfg, 11, &mut again).unwrap();
    assert_eq!(again, (0..64).map(|i| ping(11, i)).collect::<Vec<_>>(), "the next launch works");

    // How deep a recursion runs. Each level keeps 128 bytes (`local`)
    // live, so no more than stack / 128 levels fit; and the check keeps
    // less than 2 KiB in reserve (the device link's estimate for `recurse`
    // is 1280 bytes) with levels of less than 512 bytes (ptxas: 272 for
    // sm_90), so at least (stack - 2 KiB) / 512 run. A floor measured
    // wrongly, too low, faults; too high, stops short.
    let runs = |depth: u32| match recursive(LaunchConfig::new(1u32, 32u32), depth, &mut [0u64; 32]) {
        Ok(()) => true,
        Err(Error::StackOverflow { .. }) => false,
        Err(e) => panic!("depth {depth}: {e}"),
    };
    let (mut ok, mut bad) = (12u32, 50_000_000u32);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if runs(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    let kind = offload::backend().unwrap().kind;
    println!("deepest recursion of `recurse` that runs on {kind}: {ok} calls ({stack}-byte stack)");
    assert!((ok as usize) * 128 < stack, "{ok} levels of 128 bytes in a {stack}-byte stack");
    // The host fallback's frames are larger (an unoptimized build's:
    // about 350 bytes).
    let least = if kind == offload::BackendKind::Cuda { stack.saturating_sub(2048) / 512 } else { stack / 1024 };
    assert!(ok as usize >= least, "only {ok} levels in a {stack}-byte stack");
    if kind == offload::BackendKind::Cuda {
        // The floor the runtime measured for the checks (a diagnostic:
        // the image's global, read as a `DeviceGlobal` would be).
        static FLOOR: offload::DeviceGlobal<u64> = offload::DeviceGlobal::__host(0, "__offload_stack_floor");
        let floor = FLOOR.read().unwrap();
        println!(
            "stack floor of the recursion checks: local {floor:#x} (the probe's frame at {:#x})",
            floor + stack as u64 - 64
        );
        assert!(floor > 0, "the runtime set the floor");
    }
    iota_plus(offload::for_len(1000), 3, &mut vec![0u32; 1000]).unwrap();
}

/// The host fallback's stack-overflow handler leaves every other fault to
/// the handler installed before it: an overflowing ordinary thread still
/// gets Rust's "has overflowed its stack" abort, and a wild write still
/// ends the process with SIGSEGV. (Runs this test binary again as a child,
/// which installs the handler through a host launch first.)
#[test]
fn other_faults_still_reach_the_previous_handler() {
    use std::os::unix::process::ExitStatusExt;
    match std::env::var("OFFLOAD_RUNTIME_TEST_CHILD").as_deref() {
        Ok(what) => {
            let mut one = [0u64];
            recursive(LaunchConfig::new(1u32, 1u32), 3, &mut one).unwrap();
            if what == "thread" {
                let t = std::thread::Builder::new().stack_size(128 * 1024).spawn(|| recurse(50_000_000, 1)).unwrap();
                println!("{}", t.join().unwrap());
            } else {
                // SAFETY: none: this child is meant to crash.
                unsafe { core::ptr::write_volatile(core::hint::black_box(16usize) as *mut u8, 1) };
            }
            unreachable!("the child survived");
        }
        Err(_) if offload::backend().unwrap().kind == offload::BackendKind::Host => {
            for (what, signal, text) in [("thread", 6, "has overflowed its stack"), ("wild", 11, "")] {
                let out = std::process::Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        "other_faults_still_reach_the_previous_handler",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("OFFLOAD_RUNTIME_TEST_CHILD", what)
                    .env("OFFLOAD_DEVICE", "host")
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.signal(), Some(signal), "{what}: {:?}\n{stderr}", out.status);
                assert!(stderr.contains(text), "{what}: {stderr}");
            }
        }
        Err(_) => {} // the handler is the host fallback's
    }
}

/// Host-only code in a kernel body that launches a kernel: an error on the
/// host fallback (a GPU thread cannot launch through offload), and the
/// outer launch's own state (`thread_idx`, its `DisjointSlice`) is intact.
#[kernel]
fn launches_inside(out: &mut [u32]) {
    #[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
    let code = 0u32;
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    let code = {
        let mut inner = [0u32; 4];
        match iota_plus(LaunchConfig::new(1u32, 4u32), 1, &mut inner) {
            Err(Error::InvalidLaunch(l)) if l.reason.contains("inside a kernel body") => 1,
            Err(_) => 2,
            Ok(()) => 3,
        }
    };
    if let Some((i, o)) = out.at_thread() {
        *o = code * 1000 + i as u32 + offload::thread_idx().x;
    }
}

#[test]
fn a_launch_from_inside_a_kernel_is_an_error() {
    if offload::backend().is_ok_and(|b| b.kind == offload::BackendKind::Cuda) {
        return; // the host-only code that launches is not on the GPU
    }
    let mut out = vec![0u32; 64];
    launches_inside(LaunchConfig::new(2u32, 32u32), &mut out).unwrap();
    let want: Vec<u32> = (0..64).map(|i| 1000 + i + i % 32).collect();
    assert_eq!(out, want);
}

/// One level of a recursion `n` calls deep, whose frame stays live across
/// the call. In `mode` 2 every level also runs host-only code that
/// allocates and formats (the README allows host-only code in a kernel
/// body under `cfg(not(offload_device))`); in mode 3 only the 20 levels
/// nearest the top do; in mode 4 every level recurses through the C
/// library (`qsort` calls back into the recursion).
#[inline(never)]
fn rec_print(n: u64, top: u64, mode: u32) -> u64 {
    let mut buf = [0u64; 8];
    buf[(n % 8) as usize] = n;
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    if mode == 2 || (mode == 3 && top - n < 20) {
        let v: Vec<u64> = (0..(n % 50)).collect();
        core::hint::black_box(format!("{v:?}"));
    }
    if n == 0 {
        return 0;
    }
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    if mode == 4 {
        return through_qsort(n - 1, top) + n;
    }
    let r = rec_print(n - 1, top, mode);
    core::hint::black_box(&mut buf);
    r + buf[(n % 8) as usize]
}

/// `rec_print(n, top, 4)`, called back by the C library's `qsort`.
#[offload::host]
fn through_qsort(n: u64, top: u64) -> u64 {
    use core::ffi::{c_int, c_void};
    extern "C" {
        fn qsort(base: *mut c_void, n: usize, size: usize, cmp: extern "C" fn(*const c_void, *const c_void) -> c_int);
    }
    extern "C" fn cmp(a: *const c_void, b: *const c_void) -> c_int {
        // SAFETY: `qsort` passes pointers to two elements of `items`.
        let (a, b) = unsafe { (&*(a as *const [u64; 3]), &*(b as *const [u64; 3])) };
        let (n, top) = if a[2] == 0 { (a[0], a[1]) } else { (b[0], b[1]) };
        let r = rec_print(n, top, 4);
        core::hint::black_box(r);
        a[2].cmp(&b[2]) as c_int
    }
    let mut items = [[n, top, 1], [n, top, 0]];
    // SAFETY: `items` holds 2 elements of the given size; `cmp` reads them.
    unsafe { qsort(items.as_mut_ptr() as *mut c_void, 2, core::mem::size_of::<[u64; 3]>(), cmp) };
    items[0][0]
}

/// Even threads recurse `depth` calls deep, odd ones 3 (the tester's
/// reproduction of a hang on the host fallback).
#[kernel]
fn recurse_print(depth: u64, mode: u32, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        let n = if i % 2 == 0 { depth } else { 3 };
        *o = rec_print(n, n, mode);
    }
}

/// Runs this test binary again as a child that runs test `test` with
/// `OFFLOAD_RUNTIME_TEST_CHILD=what` on the host fallback, with `env` set
/// and, if `address_space_kib`, that limit on its address space (`ulimit
/// -v`); kills it after `limit` (a hang is a failure, not a stuck test
/// run). Returns the exit status (`None`: it had to be killed) and stderr.
#[offload::host]
fn child(
    test: &str,
    what: &str,
    limit: std::time::Duration,
    env: &[(&str, &str)],
    address_space_kib: Option<u64>,
) -> (Option<std::process::ExitStatus>, String) {
    use std::io::Read;
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match address_space_kib {
        Some(kib) => {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", &format!("ulimit -v {kib} && exec \"$0\" \"$@\"")]).arg(exe);
            c
        }
        None => std::process::Command::new(exe),
    };
    let mut c = cmd
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("OFFLOAD_RUNTIME_TEST_CHILD", what)
        .env("OFFLOAD_DEVICE", "host")
        .env_remove("OFFLOAD_HOST_STACK_KIB")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = c.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = c.kill();
            let _ = c.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (status, reader.join().unwrap())
}

/// Host-only code in a kernel body that allocated (and returned) before the
/// thread overflowed: the overflow is an error and the next launches,
/// which allocate at every level, and the host's own allocation and
/// printing, work. (Host fallback only: on a GPU there is no host-only
/// code, and 200 levels do not fit its stack.)
#[test]
fn an_overflow_after_host_only_code_returned_is_an_error() {
    if offload::backend().unwrap().kind != offload::BackendKind::Host {
        return;
    }
    let (_, detail) = stack_and_overflow_detail("runtime::rec_print");
    let cfg = LaunchConfig::new(1u32, 8u32);
    let mut out = vec![0u64; 8];
    for round in 0..3 {
        let e = recurse_print(cfg, 1_000_000, 3, &mut out).unwrap_err();
        assert_overflow(&e, "runtime::recurse_print", std::slice::from_ref(&detail));
        let mut ok = vec![0u64; 8];
        recurse_print(cfg, 200, 2, &mut ok).unwrap();
        let want: Vec<u64> =
            (0..8).map(|i| if i % 2 == 0 { rec_print(200, 200, 1) } else { rec_print(3, 3, 1) }).collect();
        assert_eq!(ok, want, "round {round}");
        println!("round {round}: {e}");
    }
}

/// A thread that overflows its stack while C library code is in progress
/// on it (here `qsort`, which calls back into the recursion; malloc's or
/// stdio's locks in general) cannot be stopped alone: the process ends at
/// once with one message naming the kernel, the thread and the stack, never
/// hangs at a later launch. And the tester's reproduction (host-only code
/// that allocates at every level, launched four times) never hangs: it
/// ends the same way, or (when the overflow struck outside the C library)
/// every launch returns the error.
#[test]
fn an_overflow_in_c_library_code_ends_the_process_with_a_message() {
    let limit = std::time::Duration::from_secs(120);
    match std::env::var("OFFLOAD_RUNTIME_TEST_CHILD").as_deref() {
        Ok(mode @ ("qsort" | "malloc")) => {
            let mode = if mode == "qsort" { 4 } else { 2 };
            for _ in 0..4 {
                let e = recurse_print(offload::for_len(8), 1_000_000, mode, &mut [0u64; 8]).unwrap_err();
                eprintln!("launch: {e}");
            }
            eprintln!("all launches returned");
        }
        Ok(_) => {}
        Err(_) if offload::backend().unwrap().kind == offload::BackendKind::Host => {
            use std::os::unix::process::ExitStatusExt;
            const SIGABRT: i32 = 6;
            let test = "an_overflow_in_c_library_code_ends_the_process_with_a_message";
            let message = |stderr: &str| {
                let line = stderr.lines().find(|l| l.contains("overflowed its")).unwrap_or("");
                for part in [
                    "offload: GPU thread (",
                    "of block (0, 0, 0) of kernel `runtime::recurse_print`",
                    "overflowed its 256 KiB stack",
                    "C library",
                    "OFFLOAD_HOST_STACK_KIB",
                ] {
                    assert!(line.contains(part), "no {part:?} in the message:\n{stderr}");
                }
            };
            let (status, stderr) = child(test, "qsort", limit, &[], None);
            let status = status.unwrap_or_else(|| panic!("the child hung:\n{stderr}"));
            assert_eq!(status.signal(), Some(SIGABRT), "{status:?}\n{stderr}");
            message(&stderr);
            assert!(!stderr.contains("launch:"), "{stderr}");

            let (status, stderr) = child(test, "malloc", limit, &[], None);
            let status = status.unwrap_or_else(|| panic!("the child hung:\n{stderr}"));
            if status.signal() == Some(SIGABRT) {
                message(&stderr);
            } else {
                assert!(status.success() && stderr.contains("all launches returned"), "{status:?}\n{stderr}");
            }
            println!("malloc repro: {status:?}\n{stderr}");
        }
        Err(_) => {} // the host fallback's handler only
    }
}

/// `OFFLOAD_HOST_STACK_KIB` out of its range (64 to 1048576) is one warning
/// naming the range, and the launch runs with the default stack; a stack
/// the system cannot allocate fails the launch with `Error::Memory` naming
/// the kernel and the setting. Before, both ended the program with a panic
/// inside the launch, whose message the kernel-panic hook swallowed (exit
/// 101, no message). Host fallback only (children with the setting; the
/// second under a 3 GiB address-space limit, where a block of 64 threads
/// that all wait at a barrier needs 64 stacks of 1 GiB).
#[test]
fn host_stack_setting_out_of_range_or_unallocatable_is_reported() {
    let (grid, block, bytes, seed) = (2u32, 64u32, 1024u32, 7u32);
    match std::env::var("OFFLOAD_RUNTIME_TEST_CHILD").as_deref() {
        Ok("huge" | "unallocatable") => {
            let mut cfg = LaunchConfig::new(grid, block);
            cfg.shared_mem_bytes = bytes;
            let mut out = vec![0u64; (grid * block) as usize];
            match dynamic_shared_sum(cfg, seed, &mut out) {
                Ok(()) => {
                    for b in 0..grid {
                        assert_eq!(out[(b * block) as usize], dynamic_shared_sum_on_host(bytes, seed, b), "block {b}");
                    }
                    eprintln!("launch ok");
                }
                Err(e) => eprintln!("launch: {e}"),
            }
        }
        Ok(_) => {}
        Err(_) if offload::backend().unwrap().kind == offload::BackendKind::Host => {
            let test = "host_stack_setting_out_of_range_or_unallocatable_is_reported";
            let limit = std::time::Duration::from_secs(120);
            let (status, stderr) = child(test, "huge", limit, &[("OFFLOAD_HOST_STACK_KIB", "100000000")], None);
            assert!(status.is_some_and(|s| s.success()), "{status:?}\n{stderr}");
            let warning =
                "offload: warning: OFFLOAD_HOST_STACK_KIB=\"100000000\" is not a stack size from 64 to 1048576 \
                           (KiB); using 256";
            assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
            assert!(stderr.contains("launch ok"), "{stderr}");

            let env = [("OFFLOAD_HOST_STACK_KIB", "1048576"), ("OFFLOAD_HOST_THREADS", "1")];
            let (status, stderr) = child(test, "unallocatable", limit, &env, Some(3 << 20));
            assert!(status.is_some_and(|s| s.success()), "{status:?}\n{stderr}");
            let error = "launch: cannot allocate the stack of a simulated GPU thread on the host fallback: kernel \
                         `runtime::dynamic_shared_sum` needs one stack of 1048576 KiB (OFFLOAD_HOST_STACK_KIB) for each \
                         thread of a block that waits at sync_threads or a warp collective, and the system refused one: ";
            assert!(stderr.contains(error), "{stderr}");
            assert!(
                stderr.contains("lower OFFLOAD_HOST_STACK_KIB (from 64 to 1048576) or launch smaller blocks"),
                "{stderr}"
            );
        }
        Err(_) => {}
    }
}

/// Outside a kernel a warp is the calling thread alone (a kernel body
/// called from host code is a one-thread launch): a reduction gives the
/// value itself (it was 32 times it: the butterfly read the thread's own
/// value for each of the 31 lanes that do not exist).
#[test]
fn a_warp_reduction_outside_a_kernel_is_the_value() {
    assert_eq!(offload::warp::reduce_sum(5u32), 5);
    assert_eq!(offload::warp::reduce_sum(0.1f32).to_bits(), 0.1f32.to_bits());
    assert_eq!(offload::warp::reduce_max(-3i64), -3);
    assert_eq!(offload::warp::reduce_min(7u64), 7);
}
