//! Math functions: measured error against f64 host references on random
//! inputs, checked against the bounds documented in `offload::math`.

use offload::{kernel, math};

/// The functions, in the order of the selector `func`.
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub const NAMES: [&str; 25] = [
    "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "sincos.sin", "sincos.cos", "pow",
    "powi", "fma", "floor", "ceil", "round", "trunc", "abs", "min", "max", "copysign", "hypot", "atan2",
];
/// `erf` and the fast variants follow.
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub const ERF: u32 = 25;
#[cfg_attr(any(target_arch = "nvptx64", target_arch = "amdgpu"), allow(dead_code))]
pub const FAST: [&str; 11] = ["exp", "exp10", "log", "log2", "log10", "sin", "cos", "tan", "pow", "fdivide", "sincos.sin"];

macro_rules! apply {
    ($f:expr, $x:expr, $y:expr, $z:expr) => {{
        let (x, y, z) = ($x, $y, $z);
        match $f {
            0 => math::sqrt(x),
            1 => math::rsqrt(x),
            2 => math::exp(x),
            3 => math::exp2(x),
            4 => math::log(x),
            5 => math::log2(x),
            6 => math::log10(x),
            7 => math::sin(x),
            8 => math::cos(x),
            9 => math::tan(x),
            10 => math::sincos(x).0,
            11 => math::sincos(x).1,
            12 => math::pow(x, y),
            13 => math::powi(x, y as i32),
            14 => math::fma(x, y, z),
            15 => math::floor(x),
            16 => math::ceil(x),
            17 => math::round(x),
            18 => math::trunc(x),
            19 => math::abs(x),
            20 => math::min(x, y),
            21 => math::max(x, y),
            22 => math::copysign(x, y),
            23 => math::hypot(x, y),
            24 => math::atan2(x, y),
            _ => math::erf(x),
        }
    }};
}

#[kernel]
fn math_f32(func: u32, a: &[f32], b: &[f32], c: &[f32], out: &mut [f32]) {
    for (i, o) in out.grid_stride() {
        *o = apply!(func, a[i], b[i], c[i]);
    }
}

#[kernel]
fn math_f64(func: u32, a: &[f64], b: &[f64], c: &[f64], out: &mut [f64]) {
    for (i, o) in out.grid_stride() {
        *o = apply!(func, a[i], b[i], c[i]);
    }
}

#[kernel]
fn fast_f32(func: u32, a: &[f32], b: &[f32], out: &mut [f32]) {
    use offload::math::fast;
    for (i, o) in out.grid_stride() {
        let (x, y) = (a[i], b[i]);
        *o = match func {
            0 => fast::exp(x),
            1 => fast::exp10(x),
            2 => fast::log(x),
            3 => fast::log2(x),
            4 => fast::log10(x),
            5 => fast::sin(x),
            6 => fast::cos(x),
            7 => fast::tan(x),
            8 => fast::pow(x, y),
            9 => fast::fdivide(x, y),
            _ => fast::sincos(x).0,
        };
    }
}

#[offload::host]
pub use host::check;

#[offload::host]
mod host {
    use super::*;
    use crate::util::{ulp32, ulp64, ulp_err, Rng};

    /// Inputs for function `f`: (a, b, c) in its domain.
    fn inputs(f: u32, rng: &mut Rng) -> (f64, f64, f64) {
        let u = |r: &mut Rng, lo, hi| r.uniform(lo, hi);
        match f {
            0 => (rng.log_uniform(1e-30, 1e30), 0.0, 0.0),
            1 => (rng.log_uniform(1e-30, 1e30), 0.0, 0.0),
            2 => (u(rng, -80.0, 80.0), 0.0, 0.0),
            3 => (u(rng, -120.0, 120.0), 0.0, 0.0),
            4..=6 => (rng.log_uniform(1e-30, 1e30), 0.0, 0.0),
            7..=11 => (u(rng, -1000.0, 1000.0), 0.0, 0.0),
            12 => (rng.log_uniform(1e-3, 100.0), u(rng, -10.0, 10.0), 0.0),
            13 => {
                let sign = if rng.next_u64() % 2 == 0 { 1.0 } else { -1.0 };
                (sign * u(rng, 0.25, 4.0), (rng.next_u64() % 33) as f64 - 16.0, 0.0)
            }
            14 => (u(rng, -1e3, 1e3), u(rng, -1e3, 1e3), u(rng, -1e6, 1e6)),
            15..=19 => (u(rng, -1e6, 1e6).round() / 4.0 + u(rng, -0.6, 0.6), 0.0, 0.0),
            20..=22 => (u(rng, -1e3, 1e3), u(rng, -1e3, 1e3), 0.0),
            23 => (u(rng, -1e3, 1e3), u(rng, -1e3, 1e3), 0.0),
            24 => (u(rng, -10.0, 10.0), u(rng, -10.0, 10.0), 0.0),
            _ => (u(rng, -5.0, 5.0), 0.0, 0.0),
        }
    }

    /// The f64 reference of function `f`.
    fn reference(f: u32, x: f64, y: f64, z: f64) -> f64 {
        match f {
            0 => x.sqrt(),
            1 => 1.0 / x.sqrt(),
            2 => x.exp(),
            3 => x.exp2(),
            4 => x.ln(),
            5 => x.log2(),
            6 => x.log10(),
            7 | 10 => x.sin(),
            8 | 11 => x.cos(),
            9 => x.tan(),
            12 => x.powf(y),
            13 => x.powf(y),
            14 => x.mul_add(y, z),
            15 => x.floor(),
            16 => x.ceil(),
            17 => x.round(),
            18 => x.trunc(),
            19 => x.abs(),
            20 => x.min(y),
            21 => x.max(y),
            22 => x.copysign(y),
            23 => x.hypot(y),
            24 => x.atan2(y),
            _ => offload_erf(x),
        }
    }

    /// erf in f64, independent of the implementations under test: the Maclaurin
    /// series for |x| < 1 (A&S 7.1.5) and the continued fraction of erfc above
    /// (A&S 7.1.14), evaluated backwards with 1000 terms; within about 4 ULP
    /// of the true value (checked against mpmath at 40 digits on samples).
    fn offload_erf(x: f64) -> f64 {
        let sqrt_pi = std::f64::consts::PI.sqrt();
        if x.abs() < 1.0 {
            // A&S 7.1.5, Maclaurin: terms fall fast and cancel little for |x| < 1
            let mut term = x;
            let mut sum = x;
            for n in 1..80 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            sum * 2.0 / sqrt_pi
        } else {
            let a = x.abs();
            let mut t = a;
            // k = 1000, 999, …, 1 as f64 (exact): a `while` rather than a
            // reversed inclusive range, whose iterator took as long as the
            // arithmetic in the unoptimized test build.
            let mut k = 1000.0;
            while k >= 1.0 {
                t = a + (k / 2.0) / t;
                k -= 1.0;
            }
            let erfc = (-a * a).exp() / (sqrt_pi * t);
            (1.0 - erfc).copysign(x)
        }
    }

    /// Documented bound (ULP) for f32 and f64; see `offload::math`.
    fn bound(f: u32) -> (f64, f64) {
        match f {
            0 | 14..=22 => (0.0, 0.0),
            1 => (2.0, 1.0),
            2 | 3 => (2.0, 1.0),
            4 | 5 => (1.0, 1.0),
            6 => (2.0, 1.0),
            7 | 8 | 10 | 11 => (2.0, 2.0),
            9 => (4.0, 2.0),
            12 => (4.0, 2.0),
            13 => (12.0, 12.0),
            23 | 24 => (3.0, 2.0),
            // erf f64: CUDA's 2 ULP plus 4 for the reference (series and
            // continued fraction in f64 are only that good; checked against
            // mpmath at 40 digits on samples)
            _ => (2.0, 6.0),
        }
    }

    pub fn check() -> Result<String, String> {
        let n = 1 << 16;
        let mut report = Vec::new();
        let mut worst = String::new();
        for f in 0..=ERF {
            let mut rng = Rng(0x5eed + f as u64);
            let (mut a, mut b, mut c) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
            for _ in 0..n {
                let (x, y, z) = inputs(f, &mut rng);
                a.push(x);
                b.push(y);
                c.push(z);
            }
            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
            let mut o32 = vec![0f32; n];
            let mut o64 = vec![0f64; n];
            let cfg = offload::LaunchConfig::new(64u32, 256u32);
            math_f32(cfg, f, &a32, &b32, &c32, &mut o32).map_err(|e| e.to_string())?;
            math_f64(cfg, f, &a, &b, &c, &mut o64).map_err(|e| e.to_string())?;
            let (mut e32, mut e64) = (0f64, 0f64);
            let (mut at32, mut at64) = (0usize, 0usize);
            for i in 0..n {
                // f32: reference from the f32 inputs, in f64
                let r32 = reference(f, a32[i] as f64, b32[i] as f64, c32[i] as f64);
                let r32 = if f == 14 { (a32[i] as f64).mul_add(b32[i] as f64, c32[i] as f64) as f32 as f64 } else { r32 };
                let e = if (15..=22).contains(&f) || f == 0 || f == 14 {
                    // exact functions: the f32 result must be the correctly rounded one
                    if o32[i] as f64 == (r32 as f32) as f64 || (o32[i].is_nan() && r32.is_nan()) { 0.0 } else { f64::INFINITY }
                } else {
                    ulp_err(o32[i] as f64, r32, ulp32)
                };
                if e > e32 {
                    e32 = e;
                    at32 = i;
                }
                let r64 = reference(f, a[i], b[i], c[i]);
                let e = if (15..=22).contains(&f) || f == 0 || f == 14 {
                    if o64[i] == r64 || (o64[i].is_nan() && r64.is_nan()) { 0.0 } else { f64::INFINITY }
                } else {
                    ulp_err(o64[i], r64, ulp64)
                };
                if e > e64 {
                    e64 = e;
                    at64 = i;
                }
            }
            let name = if f == ERF { "erf" } else { NAMES[f as usize] };
            let (b32b, b64b) = bound(f);
            // f32 results are compared with the f64 reference: allow the
            // final rounding (0.5 ULP); f64 results with glibc: allow its ULP
            let ok32 = e32 <= b32b + 0.5;
            let ok64 = e64 <= b64b + 1.0;
            report.push(format!("{name} {e32:.2}/{e64:.2}"));
            if !ok32 || !ok64 {
                worst.push_str(&format!(
                    "{name}: f32 {e32:.2} ULP (bound {b32b}) at x={} y={} got {} want {}; f64 {e64:.2} ULP (bound {b64b}) at x={} got {} want {}. ",
                    a32[at32], b32[at32], o32[at32], reference(f, a32[at32] as f64, b32[at32] as f64, c32[at32] as f64),
                    a[at64], o64[at64], reference(f, a[at64], b[at64], c[at64])
                ));
            }
        }
        // fast variants
        let mut fast_report = Vec::new();
        for f in 0..FAST.len() as u32 {
            let mut rng = Rng(0xfa57 + f as u64);
            let (lo, hi) = match f {
                0 => (-20.0, 20.0),
                1 => (-8.0, 8.0),
                2..=4 => (0.5, 2.0),
                5 | 6 | 10 => (-std::f64::consts::PI, std::f64::consts::PI),
                7 => (-1.2, 1.2),
                8 => (0.5, 4.0),
                _ => (-1e3, 1e3),
            };
            let a: Vec<f32> = (0..n).map(|_| rng.uniform(lo, hi) as f32).collect();
            let b: Vec<f32> = (0..n).map(|_| if f == 8 { rng.uniform(-4.0, 4.0) as f32 } else { rng.uniform(1.0, 1e3) as f32 }).collect();
            let mut o = vec![0f32; n];
            fast_f32(offload::LaunchConfig::new(64u32, 256u32), f, &a, &b, &mut o).map_err(|e| e.to_string())?;
            let mut worst_rel = 0f64;
            for i in 0..n {
                let (x, y) = (a[i] as f64, b[i] as f64);
                let r = match f {
                    0 => x.exp(),
                    1 => 10f64.powf(x),
                    2 => x.ln(),
                    3 => x.log2(),
                    4 => x.log10(),
                    5 | 10 => x.sin(),
                    6 => x.cos(),
                    7 => x.tan(),
                    8 => x.powf(y),
                    _ => x / y,
                };
                let got = o[i] as f64;
                // CUDA's bounds (CUDA Math API, "Intrinsic Functions"): ULP for
                // exp/exp10/fdivide, absolute 2^-21.41 for log/sin and 2^-21.19
                // for cos on their ranges, relative for tan/pow
                let (err, lim) = match f {
                    0 => (ulp_err(got, r, ulp32), 2.0 + (1.173 * x).abs().floor() + 0.5),
                    1 => (ulp_err(got, r, ulp32), 2.0 + (2.97 * x).abs().floor() + 0.5),
                    // absolute bounds on [-π, π] (__cosf: 2^-21.19), plus the
                    // rounding of the f32 result
                    2 | 5 | 10 => ((got - r).abs(), 2f64.powf(-21.41) + 2f64.powf(-25.0)),
                    6 => ((got - r).abs(), 2f64.powf(-21.19) + 2f64.powf(-25.0)),
                    3 => ((got - r).abs(), 2f64.powf(-22.0) + 2f64.powf(-25.0)),
                    4 => ((got - r).abs(), 2f64.powf(-24.0) + 2f64.powf(-25.0)),
                    // derived functions: sin/cos and exp2/log2 errors combined
                    7 => ((got - r).abs() / r.abs().max(1.0), 2f64.powf(-19.0)),
                    8 => ((got - r).abs() / r.abs(), 2f64.powf(-18.0)),
                    _ => (ulp_err(got, r, ulp32), 2.5),
                };
                if !(err <= lim) {
                    return Err(format!("fast::{}({x}, {y}) = {got}, reference {r}: error {err:e} above {lim:e}", FAST[f as usize]));
                }
                worst_rel = worst_rel.max(if r != 0.0 { ((got - r) / r).abs() } else { 0.0 });
            }
            fast_report.push(format!("{} {:.1e}", FAST[f as usize], worst_rel));
        }
        if !worst.is_empty() {
            return Err(worst);
        }
        Ok(format!("max ULP f32/f64: {}; fast (max rel err): {}", report.join(", "), fast_report.join(", ")))
    }
}
