//! `--foreign PTX:SYMBOL:PARAMS` (graph-gap.sh, issue 11): replays of a
//! kernel loaded from a file, with the driver API only, inside this
//! process: the exact steps of `bench/async/foreign-kernel.cu` (a module of
//! its own, `cuMemAlloc` buffers, a stream of its own, a captured graph of
//! G dependent launches replayed R times). Run before offload has touched
//! the GPU and again after offload's own graph replay, and once on
//! offload's queue stream and `DeviceBuffer`s, it tells whether the
//! runtime's extra cost per kernel node follows the process (something
//! offload does to the context) or offload's objects (its function handle,
//! buffers or stream).

use offload::cudarc::driver::sys;
use std::ffi::{c_void, CString};
use std::time::Instant;

/// A kernel in a PTX or cubin file, and how many parameters it takes: 4
/// for CUDA C's `inc(x, nx, y, ny)`, 5 for offload's entry (the same and
/// the launch shape, 1 for a 1-D launch).
pub struct Spec {
    pub label: String,
    path: String,
    symbol: String,
    params: usize,
}

impl Spec {
    /// `PTX:SYMBOL:PARAMS[:LABEL]`.
    pub fn parse(s: &str) -> Result<Spec, String> {
        let p: Vec<&str> = s.split(':').collect();
        if p.len() < 3 || p.len() > 4 {
            return Err(format!("--foreign {s}: expected PTX:SYMBOL:PARAMS[:LABEL]"));
        }
        let params = match p[2] {
            "4" => 4,
            "5" => 5,
            x => return Err(format!("--foreign {s}: PARAMS is 4 or 5, not {x}")),
        };
        let label = p.get(3).map_or_else(|| p[1].chars().take(12).collect(), |l| l.to_string());
        Ok(Spec { label, path: p[0].into(), symbol: p[1].into(), params })
    }
}

fn fail(what: String) -> ! {
    eprintln!("error: --foreign: {what}");
    std::process::exit(1)
}

fn ck(r: sys::CUresult, op: &str) {
    if r != sys::CUresult::CUDA_SUCCESS {
        fail(format!("{op}: {r:?}"))
    }
}

/// Makes device 0's primary context current, as the harness does (and as
/// offload does when it starts: it uses the same primary context).
pub fn enter() {
    // SAFETY: plain driver calls on out-parameters owned here.
    unsafe {
        ck(sys::cuInit(0), "cuInit");
        let mut dev = 0;
        ck(sys::cuDeviceGet(&mut dev, 0), "cuDeviceGet");
        let mut ctx = std::ptr::null_mut();
        ck(sys::cuDevicePrimaryCtxRetain(&mut ctx, dev), "cuDevicePrimaryCtxRetain");
        ck(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    }
}

/// `spec`'s module, loaded with `cuModuleLoadData` into the current
/// context, and its kernel.
///
/// # Safety
/// A context is current on this thread.
unsafe fn load(spec: &Spec) -> (sys::CUmodule, sys::CUfunction) {
    let mut image = std::fs::read(&spec.path).unwrap_or_else(|e| fail(format!("{}: {e}", spec.path)));
    image.push(0); // cuModuleLoadData reads PTX as a NUL-terminated string
    let symbol = CString::new(spec.symbol.as_str()).unwrap_or_else(|_| fail("bad symbol".into()));
    let (mut m, mut f) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: out-parameters owned here; `image` outlives the call, which
    // copies it; the caller made a context current.
    unsafe {
        ck(sys::cuModuleLoadData(&mut m, image.as_ptr() as *const c_void), "cuModuleLoadData");
        ck(sys::cuModuleGetFunction(&mut f, m, symbol.as_ptr()), "cuModuleGetFunction");
    }
    (m, f)
}

/// The kernel parameters `(x, len, y, len, shape)`, the first
/// `spec.params` of them, as `cuLaunchKernel` takes them: pointers to the
/// caller's locals, valid while those are.
fn params(
    spec: &Spec,
    x: &mut sys::CUdeviceptr,
    len: &mut u64,
    y: &mut sys::CUdeviceptr,
    shape: &mut u32,
) -> Vec<*mut c_void> {
    let len = len as *mut u64 as *mut c_void;
    let mut p = vec![x as *mut _ as *mut c_void, len, y as *mut _ as *mut c_void, len, shape as *mut _ as *mut c_void];
    p.truncate(spec.params);
    p
}

/// Where the replay's buffers and stream come from: its own (`None`), or
/// offload's (`x`, `y` device addresses of `DeviceBuffer`s of `n` f32 and
/// a queue's stream).
pub struct Borrowed {
    pub x: sys::CUdeviceptr,
    pub y: sys::CUdeviceptr,
    pub stream: sys::CUstream,
}

/// µs per launch (median of `reps` timed runs) of `spec`'s kernel in a
/// graph of `g` launches replayed `r` times over `n` f32, and whether the
/// chain's result is exact (x[i] + g * r). `dot`: write the graph there.
pub fn replay(
    spec: &Spec,
    n: usize,
    g: u32,
    r: u32,
    reps: u32,
    on: Option<&Borrowed>,
    dot: Option<&str>,
) -> (f64, bool) {
    let h: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut t = Vec::new();
    let mut ok = true;
    // SAFETY: driver calls in the current primary context on handles made
    // here (or offload's live buffers and stream, idle: the caller
    // synchronized its queue and does not use it until this returns);
    // `params` point at locals that outlive every launch call, which
    // copies them; everything made here is destroyed after the last
    // replay has finished (cuStreamSynchronize).
    unsafe {
        let (m, f) = load(spec);
        let (mut x, mut y, mut s) = (0, 0, std::ptr::null_mut());
        match on {
            Some(b) => (x, y, s) = (b.x, b.y, b.stream),
            None => {
                ck(sys::cuMemAlloc_v2(&mut x, n * 4), "cuMemAlloc");
                ck(sys::cuMemAlloc_v2(&mut y, n * 4), "cuMemAlloc");
                ck(sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32), "cuStreamCreate");
            }
        }
        let mut len = n as u64;
        let mut shape = 1u32;
        let block = 256u32;
        let grid = n.div_ceil(block as usize) as u32;
        let mut ab = params(spec, &mut x, &mut len, &mut y, &mut shape);
        let mut ba = ab.clone();
        ba.swap(0, 2);
        let mut graph = std::ptr::null_mut();
        let mut exec = std::ptr::null_mut();
        ck(
            sys::cuStreamBeginCapture_v2(s, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture",
        );
        for _ in 0..g / 2 {
            for p in [&mut ab, &mut ba] {
                ck(
                    sys::cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, p.as_mut_ptr(), std::ptr::null_mut()),
                    "cuLaunchKernel",
                );
            }
        }
        ck(sys::cuStreamEndCapture(s, &mut graph), "cuStreamEndCapture");
        if let Some(path) = dot {
            let p = CString::new(path).unwrap_or_else(|_| fail("bad path".into()));
            ck(sys::cuGraphDebugDotPrint(graph, p.as_ptr(), 1), "cuGraphDebugDotPrint");
        }
        ck(sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0), "cuGraphInstantiate");
        for rep in 0..=reps {
            ck(sys::cuMemcpyHtoD_v2(x, h.as_ptr() as *const c_void, n * 4), "cuMemcpyHtoD");
            ck(sys::cuCtxSynchronize(), "cuCtxSynchronize");
            let t0 = Instant::now();
            for _ in 0..r {
                ck(sys::cuGraphLaunch(exec, s), "cuGraphLaunch");
            }
            ck(sys::cuStreamSynchronize(s), "cuStreamSynchronize");
            let us = t0.elapsed().as_secs_f64() * 1e6;
            if rep == 0 {
                let mut out = vec![0f32; n];
                ck(sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, x, n * 4), "cuMemcpyDtoH");
                ok = out.iter().zip(&h).all(|(o, i)| *o == *i + (g * r) as f32);
            } else {
                t.push(us / (g as f64 * r as f64));
            }
        }
        ck(sys::cuGraphExecDestroy(exec), "cuGraphExecDestroy");
        ck(sys::cuGraphDestroy(graph), "cuGraphDestroy");
        if on.is_none() {
            ck(sys::cuMemFree_v2(x), "cuMemFree");
            ck(sys::cuMemFree_v2(y), "cuMemFree");
            ck(sys::cuStreamDestroy_v2(s), "cuStreamDestroy");
        }
        ck(sys::cuModuleUnload(m), "cuModuleUnload");
    }
    t.sort_by(|a, b| a.total_cmp(b));
    (t[t.len() / 2], ok)
}

/// `FOREIGN_PREWORK=K:keep|destroy` (graph-gap.sh): before offload starts,
/// `K` streams of this process each run `launches` launches of `spec`'s
/// kernel and are then kept alive or destroyed — the multi-stream
/// hypothesis, with the driver API alone.
pub fn prework(spec: &Spec, n: usize, how: &str, launches: u32) {
    let (k, keep) = match how.split_once(':') {
        Some((k, m)) => (k.parse::<usize>().unwrap_or_else(|_| fail(format!("FOREIGN_PREWORK={how}"))), m == "keep"),
        None => fail(format!("FOREIGN_PREWORK={how}: expected K:keep|destroy")),
    };
    // SAFETY: driver calls on objects made here; params point at locals
    // that outlive the launches (copied at each call); the streams are
    // synchronized before anything is freed. Kept streams and the module
    // live until the process ends (on purpose).
    unsafe {
        let (_module, f) = load(spec);
        let (mut x, mut y) = (0, 0);
        ck(sys::cuMemAlloc_v2(&mut x, n * 4), "cuMemAlloc");
        ck(sys::cuMemAlloc_v2(&mut y, n * 4), "cuMemAlloc");
        let mut len = n as u64;
        let mut shape = 1u32;
        let mut p = params(spec, &mut x, &mut len, &mut y, &mut shape);
        let grid = n.div_ceil(256) as u32;
        for _ in 0..k {
            let mut s = std::ptr::null_mut();
            ck(sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32), "cuStreamCreate");
            for _ in 0..launches {
                ck(
                    sys::cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, s, p.as_mut_ptr(), std::ptr::null_mut()),
                    "cuLaunchKernel",
                );
            }
            ck(sys::cuStreamSynchronize(s), "cuStreamSynchronize");
            if !keep {
                ck(sys::cuStreamDestroy_v2(s), "cuStreamDestroy");
            }
        }
    }
}
