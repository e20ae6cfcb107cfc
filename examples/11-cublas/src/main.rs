//! A CUDA library on offload's data: `C = A·B` by cuBLAS's SGEMM (through
//! cudarc's bindings, the cudarc offload itself uses) on offload
//! `DeviceBuffer`s, enqueued on an offload `Queue`'s stream, then an
//! offload kernel on the result in the same queue, `out = max(C + bias, 0)`
//! (a dense layer's bias and ReLU), checked against a host SGEMM in f64.
//!
//! ```text
//! cargo offload run --release -p cublas [-- <m> <n> <k>]
//! ```
//!
//! Defaults: m = 512, n = 384, k = 256 on a GPU; 96 × 80 × 64 on the host
//! fallback. Without a GPU, or where libcublas cannot be loaded, it says
//! why in one line and computes `C` with its own offload SGEMM kernel
//! instead (on the host fallback, or on the GPU), so the rest of the
//! program runs and is checked the same way.
//!
//! Interop (docs/async.md, section 10): `q.external(&mut [a.read(),
//! b.read(), c.write()], |stream| …)` hands over the queue's `CUstream`
//! and orders the work cuBLAS enqueues on it with offload's tracking of
//! those buffers, so the kernel that reads `C` afterwards, and the host's
//! `to_vec`, wait for the SGEMM.

use offload::prelude::*;

/// `out[i] = max(c[i] + bias[i mod n], 0)` for a row-major `c` of `n`
/// columns.
#[kernel(same_len(c, out))]
fn bias_relu(n: u32, c: &[f32], bias: &[f32], out: &mut [f32]) {
    if let Some((i, o)) = out.at_thread() {
        let v = c[i] + bias[i % n as usize];
        *o = if v > 0.0 { v } else { 0.0 };
    }
}

/// Row-major `c = a·b` (`a`: m×k, `b`: k×n), one thread per entry of `c`:
/// the stand-in for cuBLAS where it cannot run.
#[kernel]
fn sgemm(n: u32, k: u32, a: &[f32], b: &[f32], c: &mut [f32]) {
    let (n, k) = (n as usize, k as usize);
    if let Some((idx, cij)) = c.at_thread() {
        let (i, j) = (idx / n, idx % n);
        let mut acc = 0.0f32;
        for p in 0..k {
            acc += a[i * k + p] * b[p * n + j];
        }
        *cij = acc;
    }
}

#[offload::host]
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// cuBLAS through cudarc's bindings (host only).
#[offload::host]
mod blas {
    use offload::cudarc::cublas::{result, sys};
    use offload::{DeviceBuffer, Queue};

    /// A cuBLAS handle, destroyed when dropped. `cublasDestroy`
    /// synchronizes the device, so drop it once the queue's work is done.
    pub struct Blas(sys::cublasHandle_t);

    impl Drop for Blas {
        fn drop(&mut self) {
            // SAFETY: created by `cublasCreate`, destroyed once.
            let _ = unsafe { result::destroy_handle(self.0) };
        }
    }

    /// Enqueues `c = a·b` (row-major, `a`: m×k, `b`: k×n) with cuBLAS on
    /// `q`'s stream and returns the handle, to be dropped after `q` is
    /// synchronized. `Ok(Err(reason))` if cuBLAS cannot be used here.
    ///
    /// cuBLAS is column-major: a row-major m×n matrix is, read
    /// column-major, its n×m transpose. So the row-major `C = A·B` is the
    /// column-major `Cᵀ = Bᵀ·Aᵀ`: SGEMM with no transposes on the same
    /// buffers, m' = n, n' = m, k' = k, first operand `b` (leading
    /// dimension n), second `a` (leading dimension k), `c` (leading
    /// dimension n).
    pub fn sgemm(
        q: &Queue,
        (m, n, k): (i32, i32, i32),
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &mut DeviceBuffer<f32>,
    ) -> offload::Result<Result<Blas, String>> {
        let (Some(pa), Some(pb), Some(pc)) = (a.cu_deviceptr(), b.cu_deviceptr(), c.cu_deviceptr())
        else {
            return Ok(Err(
                "this is the host fallback (no CUDA GPU), and cuBLAS runs only on one".into(),
            ));
        };
        // SAFETY: only tries to open the library (dlopen); calls nothing in it.
        if !unsafe { sys::is_culib_present() } {
            let tried = offload::cudarc::get_lib_name_candidates("cublas").join(", ");
            return Ok(Err(format!(
                "libcublas could not be loaded (tried {tried}; add CUDA's lib64 to LD_LIBRARY_PATH)"
            )));
        }
        // The context offload uses is current on this thread (the buffers'
        // allocations made it so), and it is the primary context of device
        // 0, which the CUDA runtime under cuBLAS uses too.
        let blas = match result::create_handle() {
            Ok(h) => Blas(h),
            Err(e) => return Ok(Err(format!("cublasCreate failed: {e:?}"))),
        };
        // The work cuBLAS enqueues reads a and b and writes c: declared, so
        // that offload orders it with the buffers' other work.
        let r = q.external(&mut [a.read(), b.read(), c.write()], |stream| {
            let (alpha, beta) = (1.0f32, 0.0f32);
            // SAFETY: `blas.0` is a live handle; `stream` is the queue's
            // stream, in the current context (`external` made it current),
            // and it outlives the handle's use (the queue outlives `blas`
            // in `run`); the pointers are device memory of `DeviceBuffer`s
            // holding k·n (b), m·k (a) and m·n (c) floats, kept allocated
            // until the queue's work on them has finished (borrowed now,
            // tracked after), with the leading dimensions of the
            // column-major view above; `alpha` and `beta` are host scalars
            // read during the call (CUBLAS_POINTER_MODE_HOST, the default).
            Ok(unsafe {
                result::set_stream(blas.0, stream as sys::cudaStream_t).and_then(|()| {
                    result::sgemm(
                        blas.0,
                        sys::cublasOperation_t::CUBLAS_OP_N,
                        sys::cublasOperation_t::CUBLAS_OP_N,
                        n,
                        m,
                        k,
                        &alpha,
                        pb as *const f32,
                        n,
                        pa as *const f32,
                        k,
                        &beta,
                        pc as *mut f32,
                        n,
                    )
                })
            })
        })?;
        Ok(r.map(|()| blas)
            .map_err(|e| format!("cublasSgemm_v2 failed: {e:?}")))
    }
}

#[offload::host]
fn run() -> offload::Result<()> {
    use offload::{BackendKind, DeviceBuffer, Queue};

    let backend = offload::backend()?;
    println!("backend: {backend}");
    let gpu = backend.kind != BackendKind::Host;
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap_or(0))
        .collect();
    let (m, n, k) = match args[..] {
        [] if gpu => (512, 384, 256),
        [] => (96, 80, 64),
        [m, n, k] if m > 0 && n > 0 && k > 0 && m.max(n).max(k) <= 16384 => (m, n, k),
        _ => {
            eprintln!("usage: cublas [m n k], each in 1..=16384");
            std::process::exit(2);
        }
    };

    let a_host: Vec<f32> = (0..m * k)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
        .collect();
    let b_host: Vec<f32> = (0..k * n)
        .map(|i| ((i * 53 % 97) as f32 - 48.0) / 32.0)
        .collect();
    let bias_host: Vec<f32> = (0..n).map(|j| (j % 7) as f32 - 3.0).collect();
    let q = Queue::new()?;
    let a = DeviceBuffer::from_slice(&a_host)?;
    let b = DeviceBuffer::from_slice(&b_host)?;
    let bias = DeviceBuffer::from_slice(&bias_host)?;
    let mut c = DeviceBuffer::<f32>::zeroed(m * n)?;
    let mut out = DeviceBuffer::<f32>::zeroed(m * n)?;

    // m, n, k <= 16384: they fit in cuBLAS's i32 (and their products in u32).
    let blas = match blas::sgemm(&q, (m as i32, n as i32, k as i32), &a, &b, &mut c)? {
        Ok(h) => {
            println!("cuBLAS: cublasSgemm_v2 ({m}x{k} times {k}x{n}) enqueued on the offload queue's stream");
            Some(h)
        }
        Err(why) => {
            println!("cuBLAS: not used: {why}; computing C with this example's offload kernel `sgemm` instead");
            sgemm::on(&q, for_len(m * n), n as u32, k as u32, &a, &b, &mut c)?;
            None
        }
    };
    // Ordered after the SGEMM: same queue, and `c`'s tracked write.
    bias_relu::on(&q, for_len(m * n), n as u32, &c, &bias, &mut out)?;
    q.synchronize()?;
    drop(blas);
    let c_got = c.to_vec()?;
    let out_got = out.to_vec()?;

    // Host reference in f64; error relative to the sum of |terms|.
    let mut worst_c = 0f64;
    let mut worst_out = 0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut scale) = (0f64, 0f64);
            for p in 0..k {
                let t = a_host[i * k + p] as f64 * b_host[p * n + j] as f64;
                want += t;
                scale += t.abs();
            }
            let scale = scale.max(1e-30);
            worst_c = worst_c.max((c_got[i * n + j] as f64 - want).abs() / scale);
            let want_out = (want + bias_host[j] as f64).max(0.0);
            let scale_out = scale + (bias_host[j] as f64).abs();
            worst_out = worst_out.max((out_got[i * n + j] as f64 - want_out).abs() / scale_out);
        }
    }
    println!(
        "cublas: C = A·B ({m}x{n}, k = {k}) worst error/Σ|terms| {worst_c:.2e}; out = max(C + bias, 0) worst {worst_out:.2e}"
    );
    if !(worst_c < 1e-5 && worst_out < 1e-5) {
        eprintln!(
            "error: an entry differs from the host SGEMM by more than 1e-5 of the sum of |terms|"
        );
        std::process::exit(1);
    }
    println!("cublas: C and out match the host SGEMM");
    Ok(())
}
