//! Asynchronous execution (docs/async.md), written once for every backend:
//! under plain `cargo test` the kernels run on the host fallback's queue
//! workers; under `cargo offload test` with a GPU on CUDA streams. Every
//! result is compared with values computed here on the host.
//!
//! Ordering tests use `churn`, a kernel slow enough (tens of milliseconds)
//! that work which did not wait for it would see the data before it wrote
//! it.

use offload::prelude::*;
#[offload::host]
use offload::Error;
use offload::LaunchConfig;

mod common;
#[offload::host]
use common::lcg_jump;

/// The 64-bit LCG of Knuth's MMIX, `iters` steps from `v`.
fn lcg(mut v: u64, iters: u32) -> u64 {
    let mut i = 0;
    while i < iters {
        v = v.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        i += 1;
    }
    v
}

/// `out[i] = lcg(seed + i, iters)`.
#[kernel]
fn churn(iters: u32, seed: u64, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = lcg(seed + i as u64, iters);
    }
}

/// `out[i] = lcg(x[i], iters)`: reads `x` for a long time.
#[kernel(same_len(x, out))]
fn mix(iters: u32, x: &[u64], out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = lcg(x[i], iters);
    }
}

/// `y[i] = x[i] + k`.
#[kernel(same_len(x, y))]
fn plus(k: u64, x: &[u64], y: &mut [u64]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi = x[i].wrapping_add(k);
    }
}

/// `y[i] = v`.
#[kernel]
fn fill(v: u64, y: &mut [u64]) {
    if let Some((_, yi)) = y.at_thread() {
        *yi = v;
    }
}

/// `y = a·x + y`.
#[kernel(same_len(x, y))]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi += a * x[i];
    }
}

/// Panics in the thread of index `bad`; the others write `i`.
#[kernel]
fn panics_at(bad: u32, out: &mut [u32]) {
    if let Some((i, o)) = out.at_thread() {
        if i as u32 == bad {
            panic!("bad index {i}"); // MARK:panics_at
        }
        *o = i as u32;
    }
}

/// One Jacobi step in 1-D with fixed ends: `b[i] = (a[i-1] + a[i] + a[i+1]) / 3`.
#[kernel(same_len(a, b))]
fn relax(a: &[f64], b: &mut [f64]) {
    let n = a.len();
    if let Some((i, bi)) = b.at_thread() {
        *bi = if i == 0 || i + 1 == n { a[i] } else { (a[i - 1] + a[i] + a[i + 1]) / 3.0 };
    }
}

/// `v[i] *= k`, for any float.
/// Thread `bad` panics at once, the others churn for `iters` steps
/// (`out[i] = lcg(i, iters)`): the panic is recorded early in a long kernel.
#[kernel]
fn panics_then_churns(bad: u32, iters: u32, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        if i as u32 == bad {
            panic!("early {i}"); // MARK:panics_then_churns
        }
        *o = lcg(i as u64, iters);
    }
}

#[kernel]
fn scale<T>(k: T, v: &mut [T])
where
    T: DeviceCopy + core::ops::Mul<Output = T>,
{
    if let Some((_, x)) = v.at_thread() {
        *x = *x * k;
    }
}

/// `out = *r + x`: a `&T` parameter (host memory, only in a scope).
#[kernel(same_len(x, out))]
fn add_ref(r: &f64, x: &[f64], out: &mut [f64]) {
    if let Some((i, o)) = out.at_thread() {
        *o = *r + x[i];
    }
}

mod kernels {
    use offload::prelude::*;

    /// `v[i] = 2 v[i]`, from a module, crate-visible.
    #[kernel]
    pub(crate) fn twice(v: &mut [u32]) {
        if let Some((_, x)) = v.at_thread() {
            *x *= 2;
        }
    }
}

mod outer {
    /// A value type one module up from its kernel.
    #[derive(Clone, Copy, offload::DeviceCopy)]
    #[repr(C)]
    pub struct Pair {
        pub a: u32,
        pub b: u32,
    }

    pub mod inner {
        use offload::prelude::*;

        /// A value type in the kernel's own module.
        #[derive(Clone, Copy, offload::DeviceCopy)]
        #[repr(C)]
        pub struct Scale(pub u32);

        /// `out[i] = (p.a + p.b) · s + i`: `super::` and `self::` paths in the
        /// signature mean the same in the queued form.
        #[kernel]
        pub fn pair_sum(p: super::Pair, s: self::Scale, out: &mut [u32]) {
            if let Some((i, o)) = out.at_thread() {
                *o = (p.a + p.b) * s.0 + i as u32;
            }
        }
    }
}

const N: usize = 256;

/// Steps of `churn` that take tens of milliseconds: about 50 ms for `N`
/// threads on the host fallback (debug build), about 100 ms on an H200.
#[offload::host]
fn slow() -> u32 {
    match offload::backend().map(|b| b.kind) {
        Ok(offload::BackendKind::Cuda) => 20_000_000,
        _ => 100_000,
    }
}

#[test]
fn the_jump_matches_the_steps() {
    for (v, n) in [(0u64, 0u32), (1, 1), (7, 2), (12345, 1000), (u64::MAX, 77_777)] {
        assert_eq!(lcg_jump(v, n), lcg(v, n), "v {v}, n {n}");
    }
}

#[offload::host]
fn cfg() -> LaunchConfig {
    for_len(N)
}

#[offload::host]
fn expected_churn(seed: u64, iters: u32) -> Vec<u64> {
    (0..N as u64).map(|i| lcg_jump(seed + i, iters)).collect()
}

/// `file:line:column` of the line of this file marked `// MARK:<mark>`,
/// found in the source text, the column that of its `panic!`.
#[offload::host]
fn panic_site(mark: &str) -> String {
    let needle = format!("// MARK:{mark}");
    let (n, line) = include_str!("queue.rs")
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim_end().ends_with(&needle) && l.contains("panic!("))
        .expect("the marked panic");
    format!("{}:{}:{}", file!(), n + 1, line.find("panic!(").expect("panic!") + 1)
}

/// `r` is the panic of `panics_at` in thread `bad` of a launch with
/// `cfg`: every field, on every backend (the message as
/// [`panic_message`] says).
#[offload::host]
#[track_caller]
fn assert_panics_at(r: &offload::Result<()>, cfg: LaunchConfig, bad: u32) {
    let Err(Error::KernelPanic(p)) = r else {
        panic!("expected the panic of `panics_at` in thread {bad}, got {r:?}");
    };
    let offload::error::KernelPanic { kernel, message, location, block, thread } = &**p;
    let per_block = cfg.block.x;
    assert_eq!(kernel, "queue::panics_at");
    // Formatted on every backend and profile (a kernel body's `panic!`
    // arguments are recorded as values on the GPU: docs/device-model.md).
    assert_eq!(*message, format!("bad index {bad}"));
    assert_eq!(*location, panic_site("panics_at"));
    assert_eq!(*block, format!("({}, 0, 0)", bad / per_block));
    assert_eq!(*thread, format!("({}, 0, 0)", bad % per_block));
}

#[test]
fn queued_launches_return_at_once_and_run_in_order() {
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 7, &mut a).unwrap();
    let e = q.record().unwrap();
    assert!(!e.is_complete(), "the launch waited for its kernel");
    plus::on(&q, cfg(), 5, &a, &mut b).unwrap();
    plus::on(&q, cfg(), 1, &b, &mut a).unwrap();
    q.synchronize().unwrap();
    let want_b: Vec<u64> = expected_churn(7, slow()).iter().map(|v| v.wrapping_add(5)).collect();
    let want_a: Vec<u64> = want_b.iter().map(|v| v.wrapping_add(1)).collect();
    assert_eq!(b.to_vec().unwrap(), want_b);
    assert_eq!(a.to_vec().unwrap(), want_a);
}

/// Another thread's `DeviceBuffer` allocations and drops never stall a
/// queued launch (issue 11's parallel-thread stalls, 2026-12-02): one
/// thread allocates and drops buffers of 64 MiB (on a GPU) in a loop (past the
/// argument cache) while this one launches a slow kernel and checks that
/// the launch returned before it finished. On the H200 (2026-12-02, call
/// 8), with `cuMemAlloc` + `cuMemsetD8` and `cuMemFree` (which may
/// synchronize the device), 2 and 3 of 10 launches stalled in two of three
/// runs, none without the other thread; allocation and free are now
/// stream-ordered (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`, the CUDA
/// backend's `pool`), which wait for nothing. `OFFLOAD_CUDA_MEMPOOL=0`
/// brings the old calls back, and this test's failures with them. On the
/// host fallback frees never wait for kernels, and the loop's allocations
/// only took the CPU from the timing tests running beside it (1 of 3 runs
/// of this file failed on a 2-core machine): nothing is checked there.
/// Without a GPU, `bench/async/stub-sync-check.sh` runs this test on a
/// stand-in libcuda and checks that its loop makes no synchronizing driver
/// call (`OFFLOAD_DEVICE=cuda`).
#[test]
fn a_queued_launch_returns_at_once_while_another_thread_frees() {
    if !matches!(offload::backend().map(|b| b.kind), Ok(offload::BackendKind::Cuda)) {
        eprintln!("the host fallback: frees wait for no kernel, nothing to check");
        return;
    }
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut stalled = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let b = DeviceBuffer::<u8>::zeroed(64 << 20).unwrap();
                drop(b);
            }
        });
        for _ in 0..10 {
            churn::on(&q, cfg(), slow(), 12, &mut a).unwrap();
            let e = q.record().unwrap();
            if e.is_complete() {
                stalled += 1;
            }
            q.synchronize().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(stalled, 0, "{stalled} of 10 queued launches returned after their kernel while another thread freed");
    assert_eq!(a.to_vec().unwrap(), expected_churn(12, slow()));
}

/// The memory pool keeps what dropped buffers gave back (its release
/// threshold is raised, `docs/async.md` section 3), which the device then
/// no longer counts as free: an allocation that needs more than is left
/// gets it back (the pool trimmed, the allocation tried again) instead of
/// failing. On a GPU: 3/8 and 3/8 of its memory, the first dropped, then
/// 1/2, which fits only once the first's memory has left the pool. On the
/// host fallback (the host's own memory, nothing kept) there is nothing to
/// check.
#[test]
fn an_allocation_gets_the_memory_that_drops_left_in_the_pool() {
    let device = offload::current_device().unwrap();
    if device.kind() != offload::BackendKind::Cuda {
        return;
    }
    let eighth = (device.memory_bytes() / 8) as usize;
    let a = DeviceBuffer::<u8>::zeroed(3 * eighth).unwrap();
    let b = DeviceBuffer::<u8>::zeroed(3 * eighth).unwrap();
    drop(a);
    let c = DeviceBuffer::<u8>::zeroed(4 * eighth);
    assert!(c.is_ok(), "1/2 of the GPU's memory after 3/8 was dropped and 3/8 is held: {:?}", c.err());
    drop((b, c));
}

/// Memory that a dropped buffer gave back is handed out again (the CUDA
/// backend's pool keeps freed memory for reuse, `docs/async.md` section
/// 3), and a new buffer is still zeroed: after a drop once its work was
/// waited for, and after a drop while its writes were still queued (freed
/// once they have finished).
#[test]
fn a_buffer_allocated_after_a_drop_is_zeroed() {
    let q = Queue::new().unwrap();
    for round in 0..4u64 {
        let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
        assert_eq!(b.to_vec().unwrap(), vec![0; N], "round {round}: a new buffer holds old data");
        fill::on(&q, cfg(), 0xA5A5 + round, &mut b).unwrap();
        if round % 2 == 0 {
            assert_eq!(b.to_vec().unwrap(), vec![0xA5A5 + round; N]);
        }
        drop(b);
    }
    q.synchronize().unwrap();
}

#[test]
fn an_event_orders_another_queue() {
    let (q1, q2) = (Queue::new().unwrap(), Queue::new().unwrap());
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q1, cfg(), slow(), 1, &mut a).unwrap();
    let e1 = q1.record().unwrap();
    q2.wait(&e1).unwrap();
    let e2 = q2.record().unwrap();
    e2.synchronize().unwrap();
    assert!(e1.is_complete(), "q2 reached its event before q1's event it waited for");
    let t = e1.elapsed_ms(&e2).unwrap();
    assert!((0.0..60_000.0).contains(&t), "{t} ms between events");
    assert_eq!(a.to_vec().unwrap(), expected_churn(1, slow()));
}

/// Waiting for an event (its future, `elapsed_ms`, `is_complete`) is
/// about the event's own point, not a later point of its queue: with work
/// four times as long enqueued after the event, the wait returns while that
/// work still runs. (On CUDA both used to wait for an event recorded at the
/// time of the call, i.e. for the later work too.) Each round returns
/// `(time to the event, time to the end of the later work)`.
#[test]
fn an_event_is_waited_for_without_the_work_after_it() {
    fn round(seed: u64, wait: &dyn Fn(&Event, &Event)) -> (std::time::Duration, std::time::Duration) {
        let q = Queue::new().unwrap();
        let (mut a, mut b) = (DeviceBuffer::<u64>::zeroed(N).unwrap(), DeviceBuffer::<u64>::zeroed(N).unwrap());
        let start = q.record().unwrap();
        churn::on(&q, cfg(), slow(), seed, &mut a).unwrap();
        let e = q.record().unwrap();
        churn::on(&q, cfg(), 4 * slow(), seed + 1, &mut b).unwrap();
        let later = q.record().unwrap();
        let t0 = std::time::Instant::now();
        wait(&start, &e);
        let to_event = t0.elapsed();
        assert!(e.is_complete(), "the event was waited for");
        later.synchronize().unwrap();
        assert!(later.is_complete());
        assert_eq!(a.to_vec().unwrap(), expected_churn(seed, slow()));
        (to_event, t0.elapsed())
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let (to_event, to_end) = round(20, &|_, e| rt.block_on(async { e.await.unwrap() }));
    assert!(to_event < to_end / 2, "awaiting the event took {to_event:?} of {to_end:?}: it waited for the later work");
    let (to_event, to_end) = round(30, &|start, e| {
        let ms = start.elapsed_ms(e).unwrap();
        assert!(ms > 0.0, "{ms} ms from the start to the event, across a kernel");
    });
    assert!(to_event < to_end / 2, "elapsed_ms took {to_event:?} of {to_end:?}: it waited for the later work");
}

/// Waiting for an event (`synchronize`, `.await`, `elapsed_ms`,
/// `is_complete`) does not wait for what other threads wait for: here a
/// blocking launch on another thread that runs longer than all of the
/// queue's work. (On CUDA these waits used to lock the backend's state, to
/// make the context current and, after `synchronize` and `.await`, to read
/// the device's panic record; a blocking launch holds it until its kernel
/// has finished, so they waited for that kernel, and with it for the
/// queue's later work: the parallel-thread failures of the test above.)
#[test]
fn an_event_is_waited_for_while_another_thread_waits_for_a_blocking_launch() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let q = Queue::new().unwrap();
    let (mut a, mut b) = (DeviceBuffer::<u64>::zeroed(N).unwrap(), DeviceBuffer::<u64>::zeroed(N).unwrap());
    let mut c = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let start = q.record().unwrap();
    churn::on(&q, cfg(), slow(), 50, &mut a).unwrap();
    let e = q.record().unwrap();
    churn::on(&q, cfg(), 4 * slow(), 51, &mut b).unwrap();
    let later = q.record().unwrap();
    let t0 = std::time::Instant::now();
    let (to_event, to_later) = std::thread::scope(|s| {
        // Holds the backend for 12 × slow, against 5 × slow on the queue.
        let other = s.spawn(|| churn(cfg(), 12 * slow(), 52, &mut c));
        // Let it start its launch (a fraction of the first kernel's time).
        std::thread::sleep(std::time::Duration::from_millis(5));
        // The wait, then the queue's error check (the panic record).
        e.synchronize().unwrap();
        let ms = start.elapsed_ms(&e).unwrap();
        assert!(ms > 0.0, "{ms} ms from the start to the event, across a kernel");
        assert!(e.is_complete());
        let to_event = t0.elapsed();
        // A future's poll checks too.
        rt.block_on(async { (&later).await.unwrap() });
        let ms = start.elapsed_ms(&later).unwrap();
        assert!(ms > 0.0, "{ms} ms from the start to the later event");
        let to_later = t0.elapsed();
        other.join().unwrap().unwrap();
        (to_event, to_later)
    });
    let to_other = t0.elapsed();
    assert!(
        to_event < to_later / 2,
        "waiting for the event took {to_event:?}, the later work {to_later:?} (the other thread's launch {to_other:?}): it waited for the later work"
    );
    assert!(
        to_later < to_other * 9 / 10,
        "the queue's later work ended at {to_later:?}, after the other thread's launch ({to_other:?}): its wait waited for that launch"
    );
    assert_eq!(a.to_vec().unwrap(), expected_churn(50, slow()));
    assert_eq!(b.to_vec().unwrap(), expected_churn(51, 4 * slow()));
    assert_eq!(c.to_vec().unwrap(), expected_churn(52, 12 * slow()));
}

#[test]
fn a_buffer_orders_a_read_on_another_queue_after_its_write() {
    let (q1, q2) = (Queue::new().unwrap(), Queue::new().unwrap());
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q1, cfg(), slow(), 2, &mut a).unwrap();
    // No event: `a`'s pending write orders it.
    plus::on(&q2, cfg(), 1, &a, &mut b).unwrap();
    q2.synchronize().unwrap();
    let want: Vec<u64> = expected_churn(2, slow()).iter().map(|v| v.wrapping_add(1)).collect();
    assert_eq!(b.to_vec().unwrap(), want);
}

#[test]
fn a_buffer_orders_a_write_on_another_queue_after_its_reads() {
    let (q1, q2) = (Queue::new().unwrap(), Queue::new().unwrap());
    let before: Vec<u64> = (0..N as u64).map(|i| i * 3 + 1).collect();
    let mut a = DeviceBuffer::from_slice(&before).unwrap();
    let mut r = DeviceBuffer::<u64>::zeroed(N).unwrap();
    mix::on(&q1, cfg(), slow(), &a, &mut r).unwrap();
    fill::on(&q2, cfg(), 99, &mut a).unwrap();
    q2.synchronize().unwrap();
    q1.synchronize().unwrap();
    let want: Vec<u64> = before.iter().map(|&v| lcg_jump(v, slow())).collect();
    assert_eq!(r.to_vec().unwrap(), want, "the write overtook the read");
    assert_eq!(a.to_vec().unwrap(), vec![99; N]);
}

#[test]
fn host_access_waits_for_pending_work() {
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 3, &mut a).unwrap();
    // No synchronize: `to_vec` waits for the pending write.
    assert_eq!(a.to_vec().unwrap(), expected_churn(3, slow()));
    // A blocking launch waits too.
    churn::on(&q, cfg(), slow(), 4, &mut a).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    plus(cfg(), 2, &a, &mut b).unwrap();
    let want: Vec<u64> = expected_churn(4, slow()).iter().map(|v| v.wrapping_add(2)).collect();
    assert_eq!(b.to_vec().unwrap(), want);
    // And an overwrite from the host waits for a pending read.
    let before = a.to_vec().unwrap();
    let mut r = DeviceBuffer::<u64>::zeroed(N).unwrap();
    mix::on(&q, cfg(), slow(), &a, &mut r).unwrap();
    a.copy_from_slice(&vec![0; N]).unwrap();
    let want: Vec<u64> = before.iter().map(|&v| lcg_jump(v, slow())).collect();
    assert_eq!(r.to_vec().unwrap(), want);
}

#[test]
fn a_buffer_dropped_while_in_use_is_freed_after_its_work() {
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 5, &mut a).unwrap();
    let addr = a.addr();
    drop(a);
    assert!(offload::__private::graveyard_holds(addr), "freed under a running kernel");
    q.synchronize().unwrap();
    assert!(!offload::__private::graveyard_holds(addr), "still held after its work finished");
}

#[test]
fn a_panic_in_a_queued_launch_arrives_at_synchronize_and_the_queue_goes_on() {
    let q = Queue::new().unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(64).unwrap();
    panics_at::on(&q, for_len(64), 37, &mut out).unwrap();
    assert_panics_at(&q.synchronize(), for_len(64), 37);
    // Reported once; the queue works on.
    q.synchronize().unwrap();
    let mut v = DeviceBuffer::<u64>::zeroed(N).unwrap();
    fill::on(&q, cfg(), 11, &mut v).unwrap();
    q.synchronize().unwrap();
    assert_eq!(v.to_vec().unwrap(), vec![11; N]);
    // An event reports it too.
    panics_at::on(&q, for_len(64), 3, &mut out).unwrap();
    let e = q.record().unwrap();
    assert_panics_at(&e.synchronize(), for_len(64), 3);
    q.synchronize().unwrap();
}

/// An event and a future that outlive their queue still report the error
/// of the work they follow (the queue's drop waits for it but does not
/// take the error from them).
#[test]
fn an_event_that_outlives_its_queue_reports_the_queues_panic() {
    let mut out = DeviceBuffer::<u32>::zeroed(64).unwrap();
    let q = Queue::new().unwrap();
    panics_at::on(&q, for_len(64), 9, &mut out).unwrap();
    let e = q.record().unwrap();
    drop(q);
    assert_panics_at(&e.synchronize(), for_len(64), 9);
    e.synchronize().unwrap();

    let q = Queue::new().unwrap();
    panics_at::on(&q, for_len(64), 21, &mut out).unwrap();
    let e = q.record().unwrap();
    drop(q);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_panics_at(&rt.block_on(async { (&e).await }), for_len(64), 21);
}

/// In a child process of this test binary (`QUEUE_TEST_CHILD=<case>`):
/// runs `case`, which prints markers around its drops; returns the
/// child's stderr (the child must pass).
#[offload::host]
fn warning_child(case: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "the_uncollected_error_warning_prints_once_where_nothing_can_report_it"])
        .args(["--nocapture", "--test-threads=1"])
        .env("QUEUE_TEST_CHILD", case)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("1 passed"), "child {case}:\n{stdout}\n{stderr}");
    stderr.into_owned()
}

/// The error of a dropped queue's work that no wait reported is printed
/// once: at the queue's drop when nothing can report it any more (a
/// buffer its work wrote outliving it does not delay it), at the last
/// event's drop when an event outlived the queue and was never waited
/// for, and never when the event's wait reported it.
#[test]
fn the_uncollected_error_warning_prints_once_where_nothing_can_report_it() {
    const WARNING: &str = "a queue was dropped with an error nobody collected";
    let run = |bad: u32| -> (Queue, DeviceBuffer<u32>) {
        let mut out = DeviceBuffer::<u32>::zeroed(64).unwrap();
        let q = Queue::new().unwrap();
        panics_at::on(&q, for_len(64), bad, &mut out).unwrap();
        (q, out)
    };
    match std::env::var("QUEUE_TEST_CHILD").as_deref() {
        Ok("buffer") => {
            let (q, out) = run(4);
            eprintln!("<drop queue>");
            drop(q);
            eprintln!("</drop queue>");
            std::mem::forget(out);
        }
        Ok("event") => {
            let (q, out) = run(5);
            let e = q.record().unwrap();
            drop(q);
            eprintln!("<drop event>");
            drop(e);
            eprintln!("</drop event>");
            drop(out);
        }
        Ok("waited") => {
            let (q, _out) = run(6);
            let e = q.record().unwrap();
            drop(q);
            assert_panics_at(&e.synchronize(), for_len(64), 6);
        }
        Ok(other) => panic!("unknown case {other}"),
        Err(_) => {
            let between = |text: &str, from: &str, to: &str| {
                let (a, b) = (text.find(from).unwrap(), text.find(to).unwrap());
                text[a..b].matches(WARNING).count()
            };
            let buffer = warning_child("buffer");
            assert_eq!(buffer.matches(WARNING).count(), 1, "{buffer}");
            assert_eq!(between(&buffer, "<drop queue>", "</drop queue>"), 1, "at the queue's drop: {buffer}");
            assert!(buffer.contains("bad index 4"), "{buffer}");
            let event = warning_child("event");
            assert_eq!(event.matches(WARNING).count(), 1, "{event}");
            assert_eq!(between(&event, "<drop event>", "</drop event>"), 1, "at the event's drop: {event}");
            let waited = warning_child("waited");
            assert_eq!(waited.matches(WARNING).count(), 0, "the event's wait reported it: {waited}");
        }
    }
}

#[test]
fn launch_checks_fail_at_once() {
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let r = fill::on(&q, LaunchConfig::new(1u32, 4096u32), 1, &mut a);
    assert!(matches!(r, Err(Error::InvalidLaunch { .. })), "{r:?}");
    let x = DeviceBuffer::<u64>::zeroed(N - 1).unwrap();
    let r = plus::on(&q, cfg(), 1, &x, &mut a);
    assert!(matches!(&r, Err(Error::InvalidLaunch(l)) if l.reason.contains("same_len")), "{r:?}");
    let p = PinnedBuffer::<u64>::zeroed(3).unwrap();
    let r = q.memcpy_htod(&p, &mut a);
    assert!(matches!(r, Err(Error::Memory { .. })), "{r:?}");
    q.synchronize().unwrap();
}

#[test]
fn a_scope_borrows_host_memory_until_it_ends() {
    let q = Queue::new().unwrap();
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let mut d = DeviceBuffer::<f32>::zeroed(n).unwrap();
    let mut out = vec![0f32; n];
    let r = 0.5f64;
    let xd: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut sum = vec![0f64; n];
    offload::scope(&q, |s| {
        saxpy::on(s, for_len(n), 3.0, &x, &mut y)?;
        s.memcpy_htod(&x, &mut d)?;
        saxpy::on(s, for_len(n), 2.0, &x, &mut d)?;
        s.memcpy_dtoh(&d, &mut out)?;
        add_ref::on(s, for_len(n), &r, &xd, &mut sum)?;
        Ok(())
    })
    .unwrap();
    for i in 0..n {
        assert_eq!(y[i], 3.0 * i as f32 + (2 * i) as f32, "y[{i}]");
        assert_eq!(out[i], 3.0 * i as f32, "out[{i}]");
        assert_eq!(sum[i], 0.5 + i as f64, "sum[{i}]");
    }
}

#[test]
fn a_scope_returns_the_closures_error_or_the_queues() {
    let q = Queue::new().unwrap();
    let mut v = vec![0u64; N];
    let r: offload::Result<()> = offload::scope(&q, |s| {
        churn::on(s, cfg(), slow(), 9, &mut v)?;
        Err(offload::error::Memory { op: "test", reason: "the closure's own error".into() }.into())
    });
    assert!(matches!(&r, Err(Error::Memory(m)) if m.reason == "the closure's own error"), "{r:?}");
    // It waited: the launch's result is in `v`.
    assert_eq!(v, expected_churn(9, slow()));
    let mut out = vec![0u32; 64];
    let r = offload::scope(&q, |s| panics_at::on(s, for_len(64), 5, &mut out));
    assert_panics_at(&r, for_len(64), 5);
}

#[test]
fn a_scope_leaves_the_queues_error_when_the_closure_returns_its_own() {
    let q = Queue::new().unwrap();
    let mut v = vec![0u32; 256];
    let mut d = vec![0u32; 4096];
    // A kernel that panics in thread 2, then a launch the closure returns
    // the error of (a block of 4096 threads: above the limit of 1024).
    let r = offload::scope(&q, |s| {
        panics_at::on(s, for_len(256), 2, &mut v)?;
        panics_at::on(s, LaunchConfig::new(1u32, 4096u32), 0, &mut d)
    });
    assert!(matches!(&r, Err(Error::InvalidLaunch(_))), "{r:?}");
    // The panic stays for the queue's next synchronization, reported once.
    assert_panics_at(&q.synchronize(), for_len(256), 2);
    q.synchronize().unwrap();
    // Likewise when the closure panics: the scope resumes its panic, and
    // the kernel's panic stays for the queue.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = offload::scope(&q, |s| -> offload::Result<()> {
            panics_at::on(s, for_len(256), 7, &mut v)?;
            panic!("the closure's own panic");
        });
    }));
    assert_eq!(caught.unwrap_err().downcast_ref::<&str>(), Some(&"the closure's own panic"));
    assert_panics_at(&q.synchronize(), for_len(256), 7);
    q.synchronize().unwrap();
}

/// Two threads, each with its own queue: one launches `panics_at` again
/// and again, the other `fill`. Every panic is reported on the panicking
/// queue, naming `panics_at` with its thread, and never on the other
/// (issue 11). The host fallback catches each launch's panic by itself, so
/// this passes there regardless. On a GPU the context has one panic
/// record, which the first queue that checks takes: before panics were
/// attributed by their location (the CUDA backend's `queue::attrib`), this
/// failed there, `fill`'s queue reporting `panics_at`'s panic (named
/// `queue::fill` or "one of" both) and the panicking queue's synchronize
/// returning `Ok(())`.
#[test]
fn a_panic_is_reported_on_its_own_queue_while_another_queue_runs() {
    let rounds = 100u32;
    std::thread::scope(|t| {
        t.spawn(|| {
            let q = Queue::new().unwrap();
            let mut out = DeviceBuffer::<u32>::zeroed(64).unwrap();
            for r in 0..rounds {
                let bad = (r * 7) % 64;
                panics_at::on(&q, for_len(64), bad, &mut out).unwrap();
                assert_panics_at(&q.synchronize(), for_len(64), bad);
            }
        });
        t.spawn(|| {
            let q = Queue::new().unwrap();
            let mut v = DeviceBuffer::<u64>::zeroed(N).unwrap();
            for r in 0..2 * u64::from(rounds) {
                fill::on(&q, cfg(), r, &mut v).unwrap();
                let got = q.synchronize();
                assert!(got.is_ok(), "round {r}: the other queue's panic reported on `fill`'s queue: {got:?}");
                assert_eq!(v.to_vec().unwrap(), vec![r; N], "round {r}");
            }
        });
    });
}

/// A blocking launch's panic is that launch's error even when a queue's
/// wait on another thread finds the record while the kernel still runs
/// (queue waits do not wait for blocking launches; the running kernel is a
/// candidate, and the panic lies within its lines). The queue's waits
/// report nothing.
#[test]
fn a_blocking_launchs_panic_found_by_a_queue_while_it_runs_stays_its_own() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (bad, iters) = (77u32, 4 * slow());
    let done = AtomicBool::new(false);
    let mut out = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let (got, rounds) = std::thread::scope(|t| {
        let checks = t.spawn(|| {
            let q = Queue::new().unwrap();
            let mut v = DeviceBuffer::<u64>::zeroed(N).unwrap();
            let mut r = 0u64;
            while r == 0 || !done.load(Ordering::Acquire) {
                fill::on(&q, cfg(), r, &mut v).unwrap();
                let got = q.synchronize();
                assert!(got.is_ok(), "round {r}: the blocking launch's panic was reported on a queue: {got:?}");
                assert_eq!(v.to_vec().unwrap(), vec![r; N], "round {r}");
                r += 1;
            }
            r
        });
        let got = panics_then_churns(cfg(), bad, iters, &mut out);
        done.store(true, Ordering::Release);
        (got, checks.join().unwrap())
    });
    let Err(Error::KernelPanic(p)) = &got else {
        panic!("expected the panic of `panics_then_churns` in thread {bad}, got {got:?} (after {rounds} queue waits)");
    };
    let per_block = cfg().block.x;
    assert_eq!(p.kernel, "queue::panics_then_churns");
    assert_eq!(p.message, format!("early {bad}"));
    assert_eq!(p.location, panic_site("panics_then_churns"));
    assert_eq!(p.block, format!("({}, 0, 0)", bad / per_block));
    assert_eq!(p.thread, format!("({}, 0, 0)", bad % per_block));
    // The other threads' writes are mapped back, as on a panic anywhere.
    let want: Vec<u64> = (0..N as u64).map(|i| if i == u64::from(bad) { 0 } else { lcg_jump(i, iters) }).collect();
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn pinned_copies_are_queued_and_ordered() {
    let q = Queue::new().unwrap();
    let src: Vec<u64> = (0..N as u64).map(|i| i * i).collect();
    let p = PinnedBuffer::from_slice(&src).unwrap();
    let mut d = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut d2 = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut back = PinnedBuffer::<u64>::zeroed(N).unwrap();
    q.memcpy_htod(&p, &mut d).unwrap();
    plus::on(&q, cfg(), 10, &d, &mut d2).unwrap();
    q.memcpy_dtod(&d2, &mut d).unwrap();
    q.memcpy_dtoh(&d, &mut back).unwrap();
    // Reading `back` waits for the copy into it.
    let want: Vec<u64> = src.iter().map(|v| v + 10).collect();
    assert_eq!(&back[..], &want[..]);
}

/// A blocking launch on a mapped `PinnedBuffer` (no stream orders it with
/// the buffer's queued copies) waits for them first, as host access does:
/// writing the buffer waits for a pending copy that reads it, reading it
/// for one that writes it.
#[test]
fn a_launch_on_mapped_pinned_memory_waits_for_the_buffers_queued_copies() {
    let q = Queue::new().unwrap();
    let src: Vec<u64> = (0..N as u64).map(|i| 3 * i + 1).collect();
    let mut pin = PinnedBuffer::from_slice(&src).unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut d = DeviceBuffer::<u64>::zeroed(N).unwrap();
    // The copy out of `pin` runs after a slow kernel, in queue order.
    churn::on(&q, cfg(), slow(), 8, &mut a).unwrap();
    q.memcpy_htod(&pin, &mut d).unwrap();
    fill(cfg(), 7, &mut pin.mapped_mut()).unwrap();
    q.synchronize().unwrap();
    assert_eq!(d.to_vec().unwrap(), src, "the launch wrote the pinned buffer before the queued copy read it");
    // The copy into `pin` runs after a slow kernel; the launch reads `pin`.
    churn::on(&q, cfg(), slow(), 9, &mut a).unwrap();
    q.memcpy_dtoh(&d, &mut pin).unwrap();
    let mut out = DeviceBuffer::<u64>::zeroed(N).unwrap();
    plus(cfg(), 1, &pin.mapped(), &mut out).unwrap();
    let want: Vec<u64> = src.iter().map(|v| v + 1).collect();
    assert_eq!(out.to_vec().unwrap(), want, "the launch read the pinned buffer before the queued copy wrote it");
}

#[offload::device_global]
static LAST: offload::atomic::AtomicU32 = offload::atomic::AtomicU32::new(0);

#[kernel]
fn set_last(v: u32) {
    if offload::global_index() == 0 {
        LAST.with(|l| l.store(v, offload::atomic::Ordering::Relaxed));
    }
}

/// `DeviceGlobal::read` and `write` wait for the work queued so far on
/// every queue, on both backends (`cuCtxSynchronize` on CUDA): a read
/// sees a queued write that was behind a slow kernel, and a write lands
/// after such a queued write.
#[test]
fn device_global_access_waits_for_queued_work() {
    use offload::atomic::Ordering::Relaxed;
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 10, &mut a).unwrap();
    set_last::on(&q, for_len(1), 42).unwrap();
    assert_eq!(LAST.read().unwrap().load(Relaxed), 42, "the read did not wait for the queued kernel");
    churn::on(&q, cfg(), slow(), 11, &mut a).unwrap();
    set_last::on(&q, for_len(1), 7).unwrap();
    LAST.write(offload::atomic::AtomicU32::new(99)).unwrap();
    q.synchronize().unwrap();
    assert_eq!(LAST.read().unwrap().load(Relaxed), 99, "the queued kernel's write landed after the host's");
}

#[test]
fn dropping_a_queue_waits_for_its_work() {
    let q = Queue::new().unwrap();
    let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 6, &mut a).unwrap();
    let e = q.record().unwrap();
    drop(q);
    assert!(e.is_complete(), "the queue was dropped before its work finished");
    assert_eq!(a.to_vec().unwrap(), expected_churn(6, slow()));
}

#[test]
fn generic_and_module_kernels_have_queued_forms() {
    let q = Queue::new().unwrap();
    let mut f = DeviceBuffer::from_slice(&[1.5f32, -2.0, 4.0]).unwrap();
    let mut g = DeviceBuffer::from_slice(&[1.5f64, -2.0, 4.0]).unwrap();
    scale::on(&q, for_len(3), 2.0f32, &mut f).unwrap();
    scale::on::<f64, _>(&q, for_len(3), -0.5, &mut g).unwrap();
    let mut u = DeviceBuffer::from_slice(&[1u32, 2, 3]).unwrap();
    kernels::twice::on(&q, for_len(3), &mut u).unwrap();
    use kernels::twice;
    twice::on(&q, for_len(3), &mut u).unwrap();
    twice(for_len(3), &mut u).unwrap();
    q.synchronize().unwrap();
    assert_eq!(f.to_vec().unwrap(), vec![3.0, -4.0, 8.0]);
    assert_eq!(g.to_vec().unwrap(), vec![-0.75, 1.0, -2.0]);
    assert_eq!(u.to_vec().unwrap(), vec![8, 16, 24]);
    let mut o = DeviceBuffer::<u32>::zeroed(4).unwrap();
    let (p, s) = (outer::Pair { a: 2, b: 5 }, outer::inner::Scale(3));
    outer::inner::pair_sum::on(&q, for_len(4), p, s, &mut o).unwrap();
    assert_eq!(o.to_vec().unwrap(), vec![21, 22, 23, 24]);
}

/// A kernel declared in a function body (compiled on both passes, so that
/// the device image has it) has its queued form there too.
fn local_kernel() {
    #[kernel]
    fn local_inc(v: &mut [u32]) {
        if let Some((i, x)) = v.at_thread() {
            *x += i as u32;
        }
    }
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    {
        let q = Queue::new().unwrap();
        let mut u = DeviceBuffer::from_slice(&[5u32, 6, 7]).unwrap();
        local_inc::on(&q, for_len(3), &mut u).unwrap();
        assert_eq!(u.to_vec().unwrap(), vec![5, 7, 9]);
    }
}

#[test]
fn a_kernel_in_a_function_body_has_a_queued_form() {
    local_kernel();
}

/// The same steps on the host, in f64 as the kernel computes them.
#[offload::host]
fn relax_host(a: &[f64]) -> Vec<f64> {
    let n = a.len();
    (0..n).map(|i| if i == 0 || i + 1 == n { a[i] } else { (a[i - 1] + a[i] + a[i + 1]) / 3.0 }).collect()
}

#[test]
fn a_graph_replays_its_launches() {
    let q = Queue::new().unwrap();
    let n = 300;
    let init: Vec<f64> = (0..n).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect();
    let mut a = DeviceBuffer::from_slice(&init).unwrap();
    let mut b = DeviceBuffer::<f64>::zeroed(n).unwrap();
    let graph = q
        .capture(|g| {
            relax::on(g, for_len(n), &a, &mut b)?;
            relax::on(g, for_len(n), &b, &mut a)?;
            Ok(())
        })
        .unwrap();
    // Nothing ran during the capture.
    assert_eq!(a.to_vec().unwrap(), init);
    for _ in 0..10 {
        graph.launch(&q).unwrap();
    }
    let mut want = init.clone();
    for _ in 0..20 {
        want = relax_host(&want);
    }
    // Host access waits for the replays (no synchronize).
    assert_eq!(a.to_vec().unwrap(), want);
    q.synchronize().unwrap();
    assert_eq!(graph.kernels().len(), 1);
}

#[test]
fn a_graph_keeps_its_buffers_and_refuses_what_it_cannot_hold() {
    let q = Queue::new().unwrap();
    let init: Vec<u64> = (0..N as u64).collect();
    let a = DeviceBuffer::from_slice(&init).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut c = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let graph = q
        .capture(|g| {
            plus::on(g, cfg(), 1, &a, &mut b)?;
            g.memcpy_dtod(&b, &mut c)?;
            plus::on(g, cfg(), 1, &c, &mut b)?;
            Ok(())
        })
        .unwrap();
    // The graph keeps `c`'s memory: the replay below still copies through it.
    drop(c);
    graph.launch(&q).unwrap();
    let want: Vec<u64> = init.iter().map(|v| v + 2).collect();
    assert_eq!(b.to_vec().unwrap(), want);
    // Inside a capture: no synchronization, blocking launch, other queue.
    let other = Queue::new().unwrap();
    let r = q.capture(|g| {
        let e = g_sync(&q);
        assert!(matches!(e, Err(Error::Queue { .. })), "{e:?}");
        let e = plus(cfg(), 1, &a, &mut b);
        assert!(matches!(e, Err(Error::InvalidLaunch { .. })), "{e:?}");
        let e = plus::on(&other, cfg(), 1, &a, &mut b);
        assert!(matches!(e, Err(Error::Queue { .. })), "{e:?}");
        let e = b.to_vec();
        assert!(matches!(e, Err(Error::Queue { .. })), "{e:?}");
        plus::on(g, cfg(), 1, &a, &mut b)
    });
    assert!(r.is_ok(), "{r:?}");
    q.synchronize().unwrap();
    drop(graph);
}

/// A launch or copy that another thread enqueues on a queue while it is
/// being captured is refused (CUDA would capture it: it would not run now
/// but at every replay of a graph that never named it), and so is that
/// thread's synchronize, with a message that says another thread is
/// capturing; the capture itself is unaffected.
#[test]
fn work_from_another_thread_on_a_queue_being_captured_is_refused() {
    let q = Queue::new().unwrap();
    let init: Vec<u64> = (0..N as u64).collect();
    let a = DeviceBuffer::from_slice(&init).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut other = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut other2 = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let graph = std::thread::scope(|ts| {
        q.capture(|g| {
            // The other thread runs to the end while this one is capturing.
            let (launch, copy, sync) = ts
                .spawn(|| {
                    let launch = plus::on(&q, cfg(), 5, &a, &mut other);
                    let copy = q.memcpy_dtod(&a, &mut other2);
                    (launch, copy, q.synchronize())
                })
                .join()
                .unwrap();
            for (what, r) in [("launch", launch), ("copy", copy), ("synchronize", sync)] {
                match r {
                    Err(Error::Queue(e)) => {
                        let text = e.to_string();
                        assert!(text.contains("another thread is capturing this queue"), "{what}: {text}");
                    }
                    r => panic!("{what} from another thread during the capture: expected Error::Queue, got {r:?}"),
                }
            }
            plus::on(g, cfg(), 1, &a, &mut b)
        })
        .unwrap()
    });
    graph.launch(&q).unwrap();
    q.synchronize().unwrap();
    let want: Vec<u64> = init.iter().map(|v| v + 1).collect();
    assert_eq!(b.to_vec().unwrap(), want);
    // Neither the refused launch nor the refused copy ran, now or in the replay.
    assert_eq!(other.to_vec().unwrap(), vec![0; N]);
    assert_eq!(other2.to_vec().unwrap(), vec![0; N]);
    // After the capture the queue takes work from any thread again.
    std::thread::scope(|ts| ts.spawn(|| plus::on(&q, cfg(), 5, &a, &mut other)).join().unwrap()).unwrap();
    q.synchronize().unwrap();
    assert_eq!(other.to_vec().unwrap(), init.iter().map(|v| v + 5).collect::<Vec<_>>());
}

/// Every way of waiting for a queue is refused inside its capture and
/// from another thread while it is captured, as `Queue::synchronize` is
/// (CUDA forbids synchronizing during stream capture): an event's
/// `synchronize` and `elapsed_ms`, the futures, and a scope (whose end
/// synchronizes), which then never calls its closure.
#[test]
fn every_wait_is_refused_during_a_capture() {
    let q = Queue::new().unwrap();
    let a = DeviceBuffer::from_slice(&[1u64; N]).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let e0 = q.record().unwrap();
    let e1 = q.record().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let refused = |what: &str, r: offload::Result<()>| match r {
        Err(Error::Queue(_)) => {}
        r => panic!("{what} during a capture: expected Error::Queue, got {r:?}"),
    };
    let graph = std::thread::scope(|ts| {
        q.capture(|g| {
            let mut called = false;
            refused("a scope", offload::scope(&q, |_| Ok(called = true)));
            assert!(!called, "a refused scope called its closure");
            refused("Event::synchronize", e0.synchronize());
            refused("Event::elapsed_ms", e0.elapsed_ms(&e1).map(drop));
            refused("synchronize_async", rt.block_on(q.synchronize_async()));
            refused("an event's future", rt.block_on(async { (&e0).await }));
            let other = ts
                .spawn(|| {
                    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                    [
                        offload::scope(&q, |_| Ok(())),
                        e0.synchronize(),
                        e0.elapsed_ms(&e1).map(drop),
                        rt.block_on(q.synchronize_async()),
                        rt.block_on(async { (&e1).await }),
                    ]
                })
                .join()
                .unwrap();
            for r in other {
                refused("a wait from another thread", r);
            }
            plus::on(g, cfg(), 2, &a, &mut b)
        })
        .unwrap()
    });
    // After the capture every wait works again.
    graph.launch(&q).unwrap();
    offload::scope(&q, |_| Ok(())).unwrap();
    rt.block_on(q.synchronize_async()).unwrap();
    e0.synchronize().unwrap();
    assert!(e0.elapsed_ms(&e1).unwrap() >= 0.0);
    assert_eq!(b.to_vec().unwrap(), vec![3; N]);
}

#[test]
fn a_graph_replayed_many_times_keeps_one_pending_replay_per_queue() {
    let q = Queue::new().unwrap();
    let other = Queue::new().unwrap();
    // Both queues busy first, so that no replay below finishes early.
    let mut busy = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let mut busy2 = DeviceBuffer::<u64>::zeroed(N).unwrap();
    churn::on(&q, cfg(), slow(), 8, &mut busy).unwrap();
    churn::on(&other, cfg(), slow(), 9, &mut busy2).unwrap();
    let init: Vec<u64> = (0..N as u64).collect();
    let mut a = DeviceBuffer::from_slice(&init).unwrap();
    let mut b = DeviceBuffer::<u64>::zeroed(N).unwrap();
    let graph = q
        .capture(|g| {
            plus::on(g, cfg(), 1, &a, &mut b)?;
            plus::on(g, cfg(), 1, &b, &mut a)
        })
        .unwrap();
    for _ in 0..300 {
        graph.launch(&q).unwrap();
    }
    // On another queue the replays are ordered after q's by the buffers.
    for _ in 0..300 {
        graph.launch(&other).unwrap();
    }
    // The drop waits for the latest replay of each queue, which covers
    // the earlier ones; the list does not grow with every launch.
    assert!(graph.pending_replays() <= 2, "{} pending replays kept", graph.pending_replays());
    let want: Vec<u64> = init.iter().map(|v| v + 1200).collect();
    assert_eq!(a.to_vec().unwrap(), want);
    q.synchronize().unwrap();
    other.synchronize().unwrap();
    drop(graph);
    assert_eq!(busy.to_vec().unwrap(), expected_churn(8, slow()));
}

#[offload::host]
fn g_sync(q: &Queue) -> offload::Result<()> {
    q.synchronize()
}

#[test]
fn futures_complete_on_tokio() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    rt.block_on(async {
        let q = Queue::new().unwrap();
        let mut a = DeviceBuffer::<u64>::zeroed(N).unwrap();
        churn::on(&q, cfg(), slow(), 8, &mut a).unwrap();
        let e = q.record().unwrap();
        // Spawned: the future is `Send + 'static`.
        let waited = tokio::spawn(e.into_future_checked()).await.unwrap();
        waited.unwrap();
        assert_eq!(a.to_vec().unwrap(), expected_churn(8, slow()));
        let mut out = DeviceBuffer::<u32>::zeroed(64).unwrap();
        panics_at::on(&q, for_len(64), 2, &mut out).unwrap();
        let r = q.synchronize_async().await;
        assert_panics_at(&r, for_len(64), 2);
        fill::on(&q, cfg(), 4, &mut a).unwrap();
        let e = q.record().unwrap();
        (&e).await.unwrap();
        e.await.unwrap();
        assert_eq!(a.to_vec().unwrap(), vec![4; N]);
    });
}

#[offload::host]
trait IntoFutureChecked {
    fn into_future_checked(self) -> offload::Wait;
}

#[offload::host]
impl IntoFutureChecked for offload::Event {
    fn into_future_checked(self) -> offload::Wait {
        std::future::IntoFuture::into_future(self)
    }
}
