//! Devices (docs/devices.md): the device list, `OFFLOAD_DEVICE`, buffers
//! and queues of a device, the check that refuses another device's
//! buffers, peer access and peer copies, threads that drive devices of
//! their own. The device list and `OFFLOAD_DEVICE` are read once per
//! process, so each test runs its body in a child process of this test
//! binary with the environment it needs (`in_child`): the host tests with
//! the GPUs hidden (`CUDA_VISIBLE_DEVICES=-1`) and `OFFLOAD_HOST_DEVICES`
//! simulating several host devices; the GPU tests (last) with the GPUs
//! visible, where they skip (saying so) without one. Every value is
//! compared with one computed here in f64 or u64.
#![allow(clippy::result_large_err)]

use offload::prelude::*;
#[offload::host]
use offload::{BackendKind, Device, Error};

mod common;

/// `y = a·x + y`.
#[kernel(same_len(x, y))]
fn saxpy(a: f64, x: &[f64], y: &mut [f64]) {
    if let Some((i, yi)) = y.at_thread() {
        *yi += a * x[i];
    }
}

/// `out[i] = lcg(seed + i, iters)`: slow enough (tens of milliseconds on
/// the host) that work not ordered after it sees the data before it.
#[kernel]
fn churn(iters: u32, seed: u64, out: &mut [u64]) {
    if let Some((i, o)) = out.at_thread() {
        let mut v = seed + i as u64;
        let mut k = 0;
        while k < iters {
            v = v.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            k += 1;
        }
        *o = v;
    }
}

const N: usize = 4096;
const ITERS: u32 = 20_000;

/// What `churn` computes, on the host, by another route than the kernel's
/// loop (`common::lcg_jump`): iterating 4096 × 20 000 steps three times in
/// an unoptimized test build took 3 of this binary's 3.5 s.
#[offload::host]
fn expected_churn(seed: u64) -> Vec<u64> {
    (0..N as u64).map(|i| common::lcg_jump(seed + i, ITERS)).collect()
}

/// `y + a·x` in f64, element by element, as the kernel computes it.
#[offload::host]
fn expected_saxpy(a: f64, x: &[f64], y: &[f64]) -> Vec<f64> {
    x.iter().zip(y).map(|(x, y)| y + a * x).collect()
}

#[offload::host]
fn data(seed: f64) -> Vec<f64> {
    (0..N).map(|i| seed + i as f64 * 0.25).collect()
}

/// Runs `body` here if this process is the child for `test` and `env`,
/// else runs this test alone in a child process of this test binary with
/// `env` (and the GPUs hidden if `hide_gpus`) and returns the child's
/// stderr. The child must pass, and must have run the test. (A test that
/// calls this for several `env`s runs each body in its own child.)
#[offload::host]
fn in_child(test: &str, hide_gpus: bool, env: &[(&str, &str)], body: impl FnOnce()) -> Option<String> {
    if std::env::var("OFFLOAD_DEVICES_TEST").as_deref() == Ok(test) {
        if env.iter().all(|(k, v)| std::env::var(k).as_deref() == Ok(v)) {
            body();
        }
        return None;
    }
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("OFFLOAD_DEVICES_TEST", test)
        .env_remove("OFFLOAD_DEVICE")
        .env_remove("OFFLOAD_HOST_DEVICES")
        .envs(env.iter().copied());
    if hide_gpus {
        cmd.env("CUDA_VISIBLE_DEVICES", "-1");
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("1 passed"), "child {test} {env:?}:\n{stdout}\n{stderr}");
    print!("{stdout}");
    Some(stderr.into_owned())
}

/// `/proc/meminfo`'s `MemTotal` in bytes, read here independently.
#[offload::host]
fn mem_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with("MemTotal")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A saxpy on `device`'s own queue, checked against the host.
#[offload::host]
fn saxpy_on(device: Device, a: f64) {
    let q = Queue::on_device(device).unwrap();
    assert_eq!(q.device(), device);
    let (x, y) = (data(1.0), data(-3.0));
    let xd = DeviceBuffer::from_slice_on(device, &x).unwrap();
    let mut yd = DeviceBuffer::from_slice_on(device, &y).unwrap();
    assert_eq!((xd.device(), yd.device()), (device, device));
    saxpy::on(&q, for_len(N), a, &xd, &mut yd).unwrap();
    q.synchronize().unwrap();
    assert_eq!(yd.to_vec().unwrap(), expected_saxpy(a, &x, &y), "on {device}");
}

#[test]
fn without_a_gpu_the_host_is_the_only_device() {
    let stderr = in_child("without_a_gpu_the_host_is_the_only_device", true, &[], || {
        let all = offload::devices();
        assert_eq!(all.len(), 1, "{all:?}");
        let host = all[0];
        assert_eq!(
            (host.kind(), host.index(), host.ordinal(), host.compute_capability()),
            (BackendKind::Host, 0, 0, None)
        );
        assert_eq!((format!("{host}"), host.name(), host.memory_bytes()), ("host".into(), "host CPU", mem_total()));
        let gib = mem_total() as f64 / (1u64 << 30) as f64;
        assert_eq!(host.description(), format!("host: host CPU ({gib:.1} GiB)"));
        assert_eq!(offload::current_device(), Ok(host));
        assert_eq!(offload::backend().unwrap().kind, BackendKind::Host);
        assert!(host.can_access_peer(host) && host.peer_access_enabled(host) && host.cu_context().is_none());
        // Blocking and queued launches, buffers and queues: all on the host.
        let (x, mut y) = (data(2.0), data(5.0));
        let want = expected_saxpy(0.5, &x, &y);
        saxpy(for_len(N), 0.5, &x, &mut y).unwrap();
        assert_eq!(y, want);
        assert_eq!(DeviceBuffer::<f64>::zeroed(3).unwrap().device(), host);
        assert_eq!(Queue::new().unwrap().device(), host);
        saxpy_on(host, 3.0);
    });
    // Unset OFFLOAD_DEVICE with no GPU: the host, with one warning line.
    if let Some(stderr) = stderr {
        assert_eq!(stderr.matches("running kernels on the host CPU").count(), 1, "{stderr}");
    }
}

/// The child's side of `offload_device_selects_or_says_why_not`: what
/// `OFFLOAD_DEVICE` (read from the environment) must give.
#[offload::host]
fn check_setting() {
    let setting = std::env::var("OFFLOAD_DEVICE").unwrap();
    let all = offload::devices();
    let err = offload::current_device().unwrap_err();
    println!("OFFLOAD_DEVICE={setting:?}: {err}");
    match std::env::var("WANT").unwrap().as_str() {
        "no-such" => {
            assert_eq!(
                err,
                Error::from(offload::error::NoSuchDevice { requested: setting.clone(), available: all.to_vec() })
            );
            let msg = err.to_string();
            let list: Vec<String> = all.iter().map(Device::description).collect();
            let start = format!(
                "OFFLOAD_DEVICE={setting} names no device of this process, whose devices are: {};",
                list.join("; ")
            );
            assert!(msg.starts_with(&start), "{msg}");
        }
        "invalid" => {
            assert_eq!(err, Error::InvalidDeviceSetting(setting.trim().into()));
            assert!(err.to_string().contains("use `cuda` (the first GPU), `cuda:N` (GPU N"), "{err}");
        }
        "no-device" => {
            let Error::NoDevice { reason } = &err else { panic!("{err}") };
            assert!(reason.contains("no CUDA driver") || reason.contains("reports no GPU"), "{reason}");
        }
        other => panic!("WANT={other}"),
    }
    // Every use that needs the default device says the same…
    let (x, mut y) = (data(1.0), data(1.0));
    assert_eq!(saxpy(for_len(N), 2.0, &x, &mut y), Err(err.clone()));
    assert_eq!(DeviceBuffer::<f64>::zeroed(4).unwrap_err(), err);
    assert_eq!(Queue::new().unwrap_err(), err);
    assert_eq!(offload::backend().unwrap_err(), err);
    // … and a device chosen explicitly still works.
    let host = *all.iter().find(|d| d.kind() == BackendKind::Host).unwrap();
    saxpy_on(host, -1.5);
    offload::set_device(host).unwrap();
    let want = expected_saxpy(2.0, &x, &y);
    saxpy(for_len(N), 2.0, &x, &mut y).unwrap();
    assert_eq!(y, want);
}

#[test]
fn offload_device_selects_or_says_why_not() {
    let cases = [
        ("cuda:1", "no-such", "1"),
        ("cuda:0", "no-such", "1"),
        ("host:2", "no-such", "2"),
        ("cuda", "no-device", "1"),
        ("cuda:", "invalid", "1"),
        ("cuda:x", "invalid", "1"),
        ("cuda:-1", "invalid", "1"),
        ("cuda:1:2", "invalid", "1"),
        (" gpu ", "invalid", "1"),
        ("host:a", "invalid", "1"),
    ];
    for (setting, want, hosts) in cases {
        let env = [("OFFLOAD_DEVICE", setting), ("WANT", want), ("OFFLOAD_HOST_DEVICES", hosts)];
        in_child("offload_device_selects_or_says_why_not", true, &env, check_setting);
    }
}

#[test]
fn host_devices_are_devices_of_their_own() {
    let env = [("OFFLOAD_HOST_DEVICES", "3"), ("OFFLOAD_DEVICE", "host:1")];
    let stderr = in_child("host_devices_are_devices_of_their_own", true, &env, || {
        let all = offload::devices();
        let names: Vec<String> = all.iter().map(|d| d.to_string()).collect();
        assert_eq!(names, ["host:0", "host:1", "host:2"]);
        assert_eq!(all.iter().map(|d| (d.index(), d.ordinal())).collect::<Vec<_>>(), [(0, 0), (1, 1), (2, 2)]);
        // The default is OFFLOAD_DEVICE's; buffers and queues follow it.
        assert_eq!(offload::current_device(), Ok(all[1]));
        assert_eq!(DeviceBuffer::<u64>::zeroed(8).unwrap().device(), all[1]);
        assert_eq!(Queue::new().unwrap().device(), all[1]);
        for (i, &d) in all.iter().enumerate() {
            assert_eq!(d.info().unwrap().kind, BackendKind::Host);
            saxpy_on(d, i as f64 + 0.5);
        }
        // set_device changes this thread's device only.
        offload::set_device(all[2]).unwrap();
        assert_eq!(DeviceBuffer::<u64>::zeroed(8).unwrap().device(), all[2]);
        let other = std::thread::spawn(|| offload::current_device().unwrap()).join().unwrap();
        assert_eq!(other, all[1]);
    });
    assert!(!stderr.unwrap_or_default().contains("warning"));
}

#[test]
fn a_buffer_of_another_device_is_refused_until_peer_access() {
    in_child("a_buffer_of_another_device_is_refused_until_peer_access", true, &[("OFFLOAD_HOST_DEVICES", "2")], || {
        let (d0, d1) = (offload::devices()[0], offload::devices()[1]);
        let (x, y) = (data(1.0), data(10.0));
        let x1 = DeviceBuffer::from_slice_on(d1, &x).unwrap();
        let mut y0 = DeviceBuffer::from_slice_on(d0, &y).unwrap();
        let mut y1 = DeviceBuffer::from_slice_on(d1, &y).unwrap();
        let q0 = Queue::on_device(d0).unwrap();
        let wrong = |op: &str, argument, buffer_device| {
            Error::from(offload::error::WrongDevice { op: op.into(), argument, device: d0, buffer_device })
        };
        // A queued launch on d0 with x of d1: refused, nothing enqueued.
        let e = saxpy::on(&q0, for_len(N), 2.0, &x1, &mut y0).unwrap_err();
        assert_eq!(e, wrong("kernel `devices::saxpy`", "x", d1));
        assert_eq!(
            e.to_string(),
            "kernel `devices::saxpy` runs on host:0, but its argument `x` is memory of host:1: work on a device uses \
             only that device's DeviceBuffers, or a peer's once `enable_peer_access` allowed it (possible between \
             these two: `Device::enable_peer_access` on host:0 for host:1); copy the data with `Queue::memcpy_peer`, \
             or run the work on host:1"
        );
        q0.synchronize().unwrap();
        assert_eq!(y0.to_vec().unwrap(), y);
        // A blocking launch runs on the thread's device (d0, the default).
        let x0 = DeviceBuffer::from_slice_on(d0, &x).unwrap();
        assert_eq!(saxpy(for_len(N), 2.0, &x0, &mut y1), Err(wrong("kernel `devices::saxpy`", "y", d1)));
        assert_eq!(y1.to_vec().unwrap(), y);
        // Copies on d0's queue.
        let mut pinned = PinnedBuffer::<f64>::zeroed(N).unwrap();
        assert_eq!(q0.memcpy_dtod(&x1, &mut y0), Err(wrong("`Queue::memcpy_dtod`", "src", d1)));
        assert_eq!(q0.memcpy_dtod(&x0, &mut y1), Err(wrong("`Queue::memcpy_dtod`", "dst", d1)));
        assert_eq!(q0.memcpy_htod(&pinned, &mut y1), Err(wrong("`Queue::memcpy_htod`", "dst", d1)));
        assert_eq!(q0.memcpy_dtoh(&x1, &mut pinned), Err(wrong("`Queue::memcpy_dtoh`", "src", d1)));
        let mut host = vec![0.0; N];
        let r = offload::scope(&q0, |s| s.memcpy_dtoh(&x1, &mut host));
        assert_eq!(r, Err(wrong("`Scope::memcpy_dtoh`", "src", d1)));
        // A graph replays on its own device only.
        let q1 = Queue::on_device(d1).unwrap();
        let graph = q1.capture(|g| saxpy::on(g, for_len(N), 1.0, &x1, &mut y1)).unwrap();
        let Err(Error::Queue(q)) = graph.launch(&q0) else { panic!("a replay on another device") };
        assert!(q.reason.contains("captured on a queue of host:1"), "{}", q.reason);
        // Once d0 may use d1's memory, the same launches work (one way only).
        assert!(d0.can_access_peer(d1) && !d0.peer_access_enabled(d1));
        d0.enable_peer_access(d1).unwrap();
        assert!(d0.peer_access_enabled(d1) && !d1.peer_access_enabled(d0));
        saxpy::on(&q0, for_len(N), 2.0, &x1, &mut y0).unwrap();
        q0.synchronize().unwrap();
        assert_eq!(y0.to_vec().unwrap(), expected_saxpy(2.0, &x, &y));
        saxpy(for_len(N), -4.0, &x0, &mut y1).unwrap();
        assert_eq!(y1.to_vec().unwrap(), expected_saxpy(-4.0, &x, &y));
        let q1 = Queue::on_device(d1).unwrap();
        assert_eq!(
            saxpy::on(&q1, for_len(N), 1.0, &x0, &mut y1),
            Err(Error::from(offload::error::WrongDevice {
                op: "kernel `devices::saxpy`".into(),
                argument: "x",
                device: d1,
                buffer_device: d0
            }))
        );
    });
}

#[test]
fn threads_drive_devices_of_their_own_at_once() {
    in_child("threads_drive_devices_of_their_own_at_once", true, &[("OFFLOAD_HOST_DEVICES", "4")], || {
        let all = offload::devices();
        let start = std::sync::Barrier::new(all.len());
        let shared: Vec<DeviceBuffer<f64>> =
            all.iter().map(|&d| DeviceBuffer::from_slice_on(d, &data(7.0)).unwrap()).collect();
        std::thread::scope(|s| {
            for (t, &device) in all.iter().enumerate() {
                let (start, shared) = (&start, &shared);
                s.spawn(move || {
                    offload::set_device(device).unwrap();
                    let q = Queue::new().unwrap();
                    assert_eq!(q.device(), device);
                    let (x, mut y) = (data(t as f64), data(100.0 * t as f64));
                    let xd = DeviceBuffer::from_slice(&x).unwrap();
                    let mut yd = DeviceBuffer::from_slice(&y).unwrap();
                    assert_eq!(yd.device(), device);
                    start.wait();
                    for round in 0..20 {
                        let a = (t * 20 + round) as f64 * 0.125;
                        saxpy::on(&q, for_len(N), a, &xd, &mut yd).unwrap();
                        y = expected_saxpy(a, &x, &y);
                    }
                    // A blocking launch on the thread's device, after the queued ones.
                    saxpy(for_len(N), 1.0, &xd, &mut yd).unwrap();
                    y = expected_saxpy(1.0, &x, &y);
                    assert_eq!(yd.to_vec().unwrap(), y, "thread {t} on {device}");
                    // The next thread's buffer belongs to another device.
                    let next = &shared[(t + 1) % shared.len()];
                    let e = saxpy::on(&q, for_len(N), 1.0, next, &mut yd).unwrap_err();
                    let Error::WrongDevice(w) = e else { panic!("{e}") };
                    assert_eq!((w.device, w.buffer_device, w.argument), (device, next.device(), "x"));
                    q.synchronize().unwrap();
                });
            }
        });
    });
}

#[test]
fn peer_copies_move_data_between_devices_in_order() {
    in_child("peer_copies_move_data_between_devices_in_order", true, &[("OFFLOAD_HOST_DEVICES", "3")], || {
        let all = offload::devices();
        let (d0, d1, d2) = (all[0], all[1], all[2]);
        let (q0, q1, q2) =
            (Queue::on_device(d0).unwrap(), Queue::on_device(d1).unwrap(), Queue::on_device(d2).unwrap());
        let mut x0 = DeviceBuffer::<u64>::zeroed_on(d0, N).unwrap();
        let mut y1 = DeviceBuffer::<u64>::zeroed_on(d1, N).unwrap();
        let mut z0 = DeviceBuffer::<u64>::zeroed_on(d0, N).unwrap();
        // q0 writes x0 slowly; the copy on q1 must wait for it; then the
        // copy back on q0 must wait for a write of y1 on q1.
        churn::on(&q0, for_len(N), ITERS, 11, &mut x0).unwrap();
        q1.memcpy_peer(&x0, &mut y1).unwrap();
        q0.memcpy_peer(&y1, &mut z0).unwrap();
        assert_eq!(y1.device(), d1);
        assert_eq!(z0.to_vec().unwrap(), expected_churn(11));
        assert_eq!(y1.to_vec().unwrap(), expected_churn(11));
        // The queue must be on one of the two devices; lengths must match.
        let Err(Error::Queue(q)) = q2.memcpy_peer(&x0, &mut y1) else { panic!("a third device's queue") };
        assert!(q.reason.contains("the queue is on host:2 but the copy goes from host:0 to host:1"), "{}", q.reason);
        let mut short = DeviceBuffer::<u64>::zeroed_on(d1, N - 1).unwrap();
        assert!(matches!(q1.memcpy_peer(&x0, &mut short), Err(Error::Memory { .. })));
        // Within one device it is a plain device copy.
        let mut w0 = DeviceBuffer::<u64>::zeroed_on(d0, N).unwrap();
        q0.memcpy_peer(&z0, &mut w0).unwrap();
        assert_eq!(w0.to_vec().unwrap(), expected_churn(11));
        q0.synchronize().unwrap();
        q1.synchronize().unwrap();
    });
}

// The GPU tests: run with the GPUs visible; without one they skip, saying
// so (`scripts/gpu.sh run devices` runs them on a GPU).

/// The GPUs of this process; prints that the test is skipped if none.
#[offload::host]
fn gpus() -> Vec<Device> {
    let gpus: Vec<Device> = offload::devices().iter().copied().filter(|d| d.kind() == BackendKind::Cuda).collect();
    if gpus.is_empty() {
        println!("skipped: no GPU");
    }
    gpus
}

#[test]
fn a_gpu_and_the_host_are_both_devices() {
    in_child("a_gpu_and_the_host_are_both_devices", false, &[], || {
        let gpus = gpus();
        let Some(&gpu) = gpus.first() else { return };
        let all = offload::devices();
        for d in all {
            println!("device {}", d.description());
        }
        let host = *all.last().unwrap();
        assert_eq!((all.len(), host.kind(), format!("{host}")), (gpus.len() + 1, BackendKind::Host, "host".into()));
        let (major, _) = gpu.compute_capability().unwrap();
        assert!(major >= 7 && gpu.memory_bytes() > 0 && !gpu.name().is_empty(), "{}", gpu.description());
        assert_eq!((gpu.index(), gpu.ordinal(), format!("{gpu}")), (0, 0, "cuda:0".into()));
        // Unset OFFLOAD_DEVICE and a usable GPU: the GPU is the default.
        assert_eq!(offload::current_device(), Ok(gpu));
        let info = gpu.info().unwrap();
        assert!(info.kind == BackendKind::Cuda && info.description.contains(gpu.name()), "{info}");
        assert!(gpu.cu_context().is_some() && offload::cu_context() == gpu.cu_context());
        saxpy_on(gpu, 2.0);
        saxpy_on(host, 3.0);
        // Memory of a GPU is not the host's, nor the other way round.
        let (x, y) = (data(1.0), data(2.0));
        let xg = DeviceBuffer::from_slice_on(gpu, &x).unwrap();
        let mut yh = DeviceBuffer::from_slice_on(host, &y).unwrap();
        let qh = Queue::on_device(host).unwrap();
        let e = saxpy::on(&qh, for_len(N), 1.0, &xg, &mut yh).unwrap_err();
        assert_eq!(
            e,
            Error::from(offload::error::WrongDevice {
                op: "kernel `devices::saxpy`".into(),
                argument: "x",
                device: host,
                buffer_device: gpu
            })
        );
        assert!(e.to_string().contains("not possible between these two"), "{e}");
        assert!(!gpu.can_access_peer(host) && matches!(gpu.enable_peer_access(host), Err(Error::Memory { .. })));
        // Copies between them go on the GPU's queue.
        let qg = Queue::on_device(gpu).unwrap();
        qg.memcpy_peer(&xg, &mut yh).unwrap();
        let mut yg = DeviceBuffer::<f64>::zeroed_on(gpu, N).unwrap();
        qg.memcpy_peer(&yh, &mut yg).unwrap();
        assert_eq!((yh.to_vec().unwrap(), yg.to_vec().unwrap()), (x.clone(), x.clone()));
        assert!(matches!(qh.memcpy_peer(&xg, &mut yh), Err(Error::Queue { .. })));
        // A thread that never used the GPU drives a queue made on another
        // one: each call makes the GPU's context current itself.
        std::thread::scope(|s| {
            s.spawn(|| {
                saxpy::on(&qg, for_len(N), 0.5, &xg, &mut yg).unwrap();
                qg.synchronize().unwrap();
                assert_eq!(yg.to_vec().unwrap(), expected_saxpy(0.5, &x, &x));
            });
            // Meanwhile this thread drives the host device.
            saxpy::on(&qh, for_len(N), 4.0, &yh, &mut DeviceBuffer::from_slice_on(host, &y).unwrap()).unwrap();
            qh.synchronize().unwrap();
        });
    });
}

#[test]
fn offload_device_cuda_0_selects_the_first_gpu() {
    in_child("offload_device_cuda_0_selects_the_first_gpu", false, &[("OFFLOAD_DEVICE", "cuda:0")], || {
        let gpus = gpus();
        let Some(&gpu) = gpus.first() else { return };
        assert_eq!(offload::current_device(), Ok(gpu));
        let (x, mut y) = (data(3.0), data(-1.0));
        let want = expected_saxpy(0.25, &x, &y);
        saxpy(for_len(N), 0.25, &x, &mut y).unwrap();
        assert_eq!(y, want);
        println!("OFFLOAD_DEVICE=cuda:0 runs on {}", offload::current_device().unwrap().description());
    });
}

/// `OFFLOAD_DEVICE=cuda:N` for the first ordinal past the last GPU
/// (`cuda:1` on a machine of one GPU, `cuda:0` on one without): an error
/// that lists the devices, the GPUs included.
#[test]
fn a_gpu_past_the_last_is_an_error_listing_the_devices() {
    let n = offload::devices().iter().filter(|d| d.kind() == BackendKind::Cuda).count();
    let setting = format!("cuda:{n}");
    let env = [("OFFLOAD_DEVICE", setting.as_str()), ("WANT", "no-such")];
    in_child("a_gpu_past_the_last_is_an_error_listing_the_devices", false, &env, check_setting);
}
