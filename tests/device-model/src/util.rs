//! Host-side helpers of the checks.

/// SplitMix64: reproducible test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Log-uniform in `[lo, hi)`, `lo > 0`.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (self.uniform(lo.ln(), hi.ln())).exp()
    }
}

/// The spacing of `f32`s at `r` (one ULP), for error measurement.
pub fn ulp32(r: f64) -> f64 {
    let a = r.abs();
    if a < f32::MIN_POSITIVE as f64 {
        2f64.powi(-149)
    } else {
        2f64.powi(a.log2().floor() as i32 - 23)
    }
}

/// The spacing of `f64`s at `r`.
pub fn ulp64(r: f64) -> f64 {
    let a = r.abs();
    if a < f64::MIN_POSITIVE {
        2f64.powi(-1074)
    } else {
        let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        2f64.powi(e - 52)
    }
}

/// Error of `got` against the reference `want`, in ULP of the result type;
/// equal infinities or NaNs count as exact, a mismatch of kind as infinite.
pub fn ulp_err(got: f64, want: f64, ulp: fn(f64) -> f64) -> f64 {
    if got == want || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    (got - want).abs() / ulp(want)
}
