//! Feature tests of offload's device programming model.
//!
//!     cargo offload run -p device-model --release [-- <check>…]
//!
//! Each check launches kernels (on the GPU if there is one, else on the host
//! fallback) and compares every result with an independent host
//! computation; the program prints one line per check and exits non-zero if
//! any fails. `cargo test -p device-model` runs the same checks on the host
//! fallback.

mod atomics;
mod casts;
mod divergence;
mod features;
mod geometry;
mod globals;
mod math;
mod orderings;
mod panics;
mod print;
mod shared;
// `#[offload::host]` cannot be put on `mod x;` (a proc-macro attribute
// on a file module is unstable), so the cfg is spelled out.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod util;
mod warp;
mod warp_divergence;

/// The checks: name, function, whether it may run on a GPU.
#[offload::host]
type Check = (&'static str, fn() -> Result<String, String>, bool);

#[offload::host]
const CHECKS: &[Check] = &[
    ("geometry", geometry::check, true),
    ("shared", shared::check, true),
    ("atomics", atomics::check, true),
    ("orderings", orderings::check, true),
    ("warp", warp::check, true),
    ("math", math::check, true),
    ("casts", casts::check, true),
    ("features", features::check, true),
    ("print", || print::run(7), true),
    ("globals", globals::check, true),
    ("panics", panics::check, true),
    ("divergence", divergence::check, false),
    ("warp_divergence", warp_divergence::check, true),
];

#[offload::host]
fn main() {
    let backend = match offload::backend() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let only: Vec<String> = std::env::args().skip(1).collect();
    println!("device-model on {backend}");
    let mut failed = 0;
    for (name, check, on_gpu) in CHECKS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        if !on_gpu && backend.kind == offload::BackendKind::Cuda {
            println!("{name:<11} skip  (host fallback only: on a GPU this kernel would hang)");
            continue;
        }
        let t = std::time::Instant::now();
        let r = check();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match r {
            Ok(s) => println!("{name:<11} ok    {ms:>8.1} ms  {s}"),
            Err(e) => {
                failed += 1;
                println!("{name:<11} FAIL  {ms:>8.1} ms  {e}");
            }
        }
    }
    if failed > 0 {
        println!("{failed} check(s) failed");
        std::process::exit(1);
    }
}

