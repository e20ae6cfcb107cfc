//! Float → 128-bit integer casts: Rust's `as` saturates (NaN → 0, out of
//! range → the integer's minimum or maximum, else truncation toward zero;
//! The Rust Reference, "Numeric cast"). On the GPU the device link expands
//! them inline (`offload_linker::wide`); here each result is compared with
//! a reference computed from the float's bits on the host.

use offload::kernel;

/// `x as i128` and `x as u128` for `f64` and `f32` inputs.
#[kernel(same_len(x, s, u))]
fn casts_f64(x: &[f64], s: &mut [i128], u: &mut [u128]) {
    for (i, si) in s.grid_stride() {
        *si = x[i] as i128;
    }
    for (i, ui) in u.grid_stride() {
        *ui = x[i] as u128;
    }
}

#[kernel(same_len(x, s, u))]
fn casts_f32(x: &[f32], s: &mut [i128], u: &mut [u128]) {
    for (i, si) in s.grid_stride() {
        *si = x[i] as i128;
    }
    for (i, ui) in u.grid_stride() {
        *ui = x[i] as u128;
    }
}

#[offload::host]
pub use host::check;

#[offload::host]
mod host {
    use super::*;
    use crate::util::Rng;

    /// `|x|` truncated toward zero, from the bits of `x` (finite, |x| < 2^128).
    fn magnitude(x: f64) -> u128 {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        if exp == 0 {
            return 0; // zero or subnormal: |x| < 1
        }
        let mant = u128::from(bits & ((1 << 52) - 1) | 1 << 52);
        let e = exp - 1075; // x = mant · 2^e
        if e >= 0 {
            mant << e
        } else if e > -64 {
            mant >> -e
        } else {
            0
        }
    }

    /// Rust's saturating `x as i128`, from the definition.
    pub fn to_i128(x: f64) -> i128 {
        let two127 = 2f64.powi(127);
        if x.is_nan() {
            0
        } else if x >= two127 {
            i128::MAX
        } else if x <= -two127 {
            i128::MIN
        } else if x < 0.0 {
            -(magnitude(x) as i128)
        } else {
            magnitude(x) as i128
        }
    }

    /// Rust's saturating `x as u128`, from the definition.
    pub fn to_u128(x: f64) -> u128 {
        if x.is_nan() || x <= 0.0 {
            0
        } else if x >= 2f64.powi(128) {
            u128::MAX
        } else {
            magnitude(x)
        }
    }

    /// Edge cases, then random values of every magnitude from 2^-20 to 2^130.
    fn inputs() -> Vec<f64> {
        let p = |e: i32| 2f64.powi(e);
        let mut v = vec![
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.999_999_9,
            -0.999_999_9,
            1.0,
            -1.0,
            1.5,
            -1.5,
            p(52) + 0.5,
            p(63),
            -p(63),
            p(64),
            p(64) + 4096.0,
            -p(64) - 4096.0,
            p(126) * 1.5,
            p(127),
            -p(127),
            p(127) * (1.0 - p(-53)),
            -p(127) * (1.0 - p(-53)),
            -p(127) * (1.0 + p(-52)),
            p(128),
            -p(128),
            p(128) * (1.0 - p(-53)),
            1e38,
            -1e38,
            1e39,
            123_456_789_012_345_678_901_234_567_890.0,
            -123_456_789_012_345_678_901_234_567_890.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::from(f32::MAX),
            f64::from(f32::MIN),
            f64::from(f32::MIN_POSITIVE),
            1e-45,
        ];
        let mut rng = Rng(0x00c0_ffee);
        for _ in 0..2000 {
            let m = rng.uniform(1.0, 2.0) * p(rng.uniform(-20.0, 131.0) as i32);
            v.push(if rng.next_u64() & 1 == 1 { -m } else { m });
        }
        v
    }

    fn compare<T: PartialEq + std::fmt::Debug>(what: &str, x: &[f64], got: &[T], want: impl Fn(f64) -> T) -> Result<(), String> {
        for (i, (g, &xi)) in got.iter().zip(x).enumerate() {
            let w = want(xi);
            if *g != w {
                return Err(format!("{what}: x[{i}] = {xi:e}: got {g:?}, expected {w:?}"));
            }
        }
        Ok(())
    }

    pub fn check() -> Result<String, String> {
        let x = inputs();
        let n = x.len();
        // The reference is the language's definition: the host's own `as`
        // must agree with it.
        compare("host f64 as i128", &x, &x.iter().map(|&v| v as i128).collect::<Vec<_>>(), to_i128)?;
        compare("host f64 as u128", &x, &x.iter().map(|&v| v as u128).collect::<Vec<_>>(), to_u128)?;

        let (mut s, mut u) = (vec![7i128; n], vec![7u128; n]);
        casts_f64(offload::for_len(n), &x, &mut s, &mut u).map_err(|e| e.to_string())?;
        compare("f64 as i128", &x, &s, to_i128)?;
        compare("f64 as u128", &x, &u, to_u128)?;

        // f32: the same values rounded to f32 (exactly representable in
        // f64, so the reference applies to them unchanged).
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).chain([2f32.powi(127), -2f32.powi(127), 1e-45, -1e-45]).collect();
        let x32_64: Vec<f64> = x32.iter().map(|&v| f64::from(v)).collect();
        let n = x32.len();
        let (mut s, mut u) = (vec![7i128; n], vec![7u128; n]);
        casts_f32(offload::for_len(n), &x32, &mut s, &mut u).map_err(|e| e.to_string())?;
        compare("f32 as i128", &x32_64, &s, to_i128)?;
        compare("f32 as u128", &x32_64, &u, to_u128)?;
        Ok(format!("{} f64 and {n} f32 values (NaN, ±inf, ±2^127, 2^128, subnormals, random) exact", x.len()))
    }
}
