//! Math functions for kernels, for `f32` and `f64`: `offload::math::sin(x)`.
//!
//! `core` has no transcendental functions and its float methods are not
//! available on the device, so kernels call these free functions; each is
//! generic over [`Float`] (`f32` and `f64`). Same names as CUDA's, without
//! the `f` suffix (`sinf` → `sin(x: f32)`).
//!
//! # Implementations
//!
//! | | GPU, libdevice found | GPU, no libdevice | host fallback |
//! | --- | --- | --- | --- |
//! | `sqrt fma floor ceil round trunc abs min max copysign` | PTX instructions (`sqrt.rn`, `fma.rn`, `cvt.rmi`, `abs`, `min`, `copysign`), IEEE exact | same | `std` |
//! | the others | libdevice `__nv_*` (CUDA's own implementation) | the `libm` crate (musl's algorithms) | `std` (the C library), `libm` for `erf` |
//! | [`fast`] | libdevice `__nv_fast_*` (`ex2.approx`, `sin.approx`, …) | `libm` (accurate) | `std` (accurate) |
//!
//! The device linker links libdevice (`libdevice.10.bc`) when it finds it:
//! `OFFLOAD_LIBDEVICE`, `$CUDA_HOME`/`$CUDA_PATH`/`/usr/local/cuda`
//! `nvvm/libdevice`, next to `ptxas` (`OFFLOAD_PTXAS` or `PATH`), or in
//! PyPI's `nvidia-cuda-nvcc` / `nvidia-nvvm` wheels; otherwise it binds the
//! `libm` fallbacks. `OFFLOAD_LIBDEVICE=none` forces the fallback.
//!
//! # Accuracy (maximum error in ULP over the full range)
//!
//! The bounds are CUDA's (CUDA C++ Programming Guide, "Mathematical
//! Functions", single- and double-precision tables), which libdevice meets;
//! `libm` and glibc are at least as accurate for these functions. The
//! `math` test of `tests/device-model` measures every function on random
//! inputs against an `f64` host reference (for `f32`) and checks these
//! bounds on each backend (for `f64` it allows one more ULP, the
//! reference's own error).
//!
//! | function | f32 | f64 |
//! | --- | --- | --- |
//! | `sqrt`, `fma`, `floor`, `ceil`, `round`, `trunc`, `abs`, `min`, `max`, `copysign` | 0 | 0 |
//! | `rsqrt` | 2 | 1 |
//! | `exp`, `exp2` | 2 | 1 |
//! | `log`, `log2` | 1 | 1 |
//! | `log10` | 2 | 1 |
//! | `sin`, `cos`, `sincos` | 2 | 2 |
//! | `tan` | 4 | 2 |
//! | `pow` | 4 | 2 |
//! | `powi` (`\|n\|` ≤ 16; binary exponentiation, same code on every backend) | 12 | 12 |
//! | `hypot` | 3 | 2 |
//! | `atan2` | 3 | 2 |
//! | `erf` | 2 | 2 |
//!
//! `min`/`max` return the other operand when one is NaN (CUDA `fminf`,
//! Rust `f32::min`); `round` rounds half away from zero (CUDA `roundf`).

pub mod methods;

mod sealed {
    pub trait Sealed {}
}

/// `f32` or `f64`; the implementation behind the free functions of
/// [`math`](self).
pub trait Float: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn m_sqrt(self) -> Self;
    #[doc(hidden)]
    fn m_rsqrt(self) -> Self;
    #[doc(hidden)]
    fn m_exp(self) -> Self;
    #[doc(hidden)]
    fn m_exp2(self) -> Self;
    #[doc(hidden)]
    fn m_log(self) -> Self;
    #[doc(hidden)]
    fn m_log2(self) -> Self;
    #[doc(hidden)]
    fn m_log10(self) -> Self;
    #[doc(hidden)]
    fn m_sin(self) -> Self;
    #[doc(hidden)]
    fn m_cos(self) -> Self;
    #[doc(hidden)]
    fn m_tan(self) -> Self;
    #[doc(hidden)]
    fn m_sincos(self) -> (Self, Self);
    #[doc(hidden)]
    fn m_pow(self, y: Self) -> Self;
    #[doc(hidden)]
    const ONE: Self;
    #[doc(hidden)]
    fn m_fma(self, b: Self, c: Self) -> Self;
    #[doc(hidden)]
    fn m_floor(self) -> Self;
    #[doc(hidden)]
    fn m_ceil(self) -> Self;
    #[doc(hidden)]
    fn m_round(self) -> Self;
    #[doc(hidden)]
    fn m_trunc(self) -> Self;
    #[doc(hidden)]
    fn m_abs(self) -> Self;
    #[doc(hidden)]
    fn m_min(self, y: Self) -> Self;
    #[doc(hidden)]
    fn m_max(self, y: Self) -> Self;
    #[doc(hidden)]
    fn m_copysign(self, y: Self) -> Self;
    #[doc(hidden)]
    fn m_hypot(self, y: Self) -> Self;
    #[doc(hidden)]
    fn m_atan2(self, x: Self) -> Self;
    #[doc(hidden)]
    fn m_erf(self) -> Self;
}

macro_rules! free {
    ($($(#[$doc:meta])* $name:ident ( $($a:ident),* ) => $m:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<F: Float>(x: F $(, $a: F)*) -> F {
            x.$m($($a),*)
        }
    )*};
}

free! {
    /// Square root, correctly rounded (`sqrt.rn`).
    sqrt() => m_sqrt;
    /// `1 / sqrt(x)` (CUDA `rsqrtf`).
    rsqrt() => m_rsqrt;
    /// `e^x`.
    exp() => m_exp;
    /// `2^x`.
    exp2() => m_exp2;
    /// Natural logarithm.
    log() => m_log;
    /// Base-2 logarithm.
    log2() => m_log2;
    /// Base-10 logarithm.
    log10() => m_log10;
    /// Sine of `x` radians.
    sin() => m_sin;
    /// Cosine of `x` radians.
    cos() => m_cos;
    /// Tangent of `x` radians.
    tan() => m_tan;
    /// `x^y`.
    pow(y) => m_pow;
    /// `x·b + c` with one rounding (`fma.rn`).
    fma(b, c) => m_fma;
    /// Largest integer `≤ x`.
    floor() => m_floor;
    /// Smallest integer `≥ x`.
    ceil() => m_ceil;
    /// Nearest integer, halves away from zero.
    round() => m_round;
    /// Integer part (towards zero).
    trunc() => m_trunc;
    /// Absolute value.
    abs() => m_abs;
    /// Minimum; the other operand if one is NaN.
    min(y) => m_min;
    /// Maximum; the other operand if one is NaN.
    max(y) => m_max;
    /// `|x|` with the sign of `y`.
    copysign(y) => m_copysign;
    /// `sqrt(x² + y²)` without undue overflow.
    hypot(y) => m_hypot;
    /// Angle of the point `(x, y)`, in `[-π, π]`: `atan2(y, x)`, the first
    /// argument is `y`.
    atan2(x2) => m_atan2;
    /// Error function.
    erf() => m_erf;
}

/// `(sin x, cos x)`.
#[inline(always)]
pub fn sincos<F: Float>(x: F) -> (F, F) {
    x.m_sincos()
}

/// `x^n` for an integer `n`, by binary exponentiation (the algorithm of
/// compiler-rt's `__powisf2`, which `f32::powi` uses on the host): the same
/// code on every backend, so results are bit-identical. Each squaring
/// rounds, so the error grows with `|n|` (up to 12 ULP for `|n| ≤ 16`).
#[inline(always)]
pub fn powi<F: Float + core::ops::Mul<Output = F> + core::ops::Div<Output = F>>(x: F, n: i32) -> F {
    let mut a = x;
    let mut e = n.unsigned_abs();
    let mut r = F::ONE;
    loop {
        if e & 1 != 0 {
            r = r * a;
        }
        e >>= 1;
        if e == 0 {
            break;
        }
        a = a * a;
    }
    if n < 0 {
        F::ONE / r
    } else {
        r
    }
}

// ---------------------------------------------------------------------------
// Host: std.

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
macro_rules! host_float {
    ($t:ty, $erf:path) => {
        impl sealed::Sealed for $t {}
        impl Float for $t {
            #[inline(always)] fn m_sqrt(self) -> Self { self.sqrt() }
            #[inline(always)] fn m_rsqrt(self) -> Self { 1.0 / self.sqrt() }
            #[inline(always)] fn m_exp(self) -> Self { self.exp() }
            #[inline(always)] fn m_exp2(self) -> Self { self.exp2() }
            #[inline(always)] fn m_log(self) -> Self { self.ln() }
            #[inline(always)] fn m_log2(self) -> Self { self.log2() }
            #[inline(always)] fn m_log10(self) -> Self { self.log10() }
            #[inline(always)] fn m_sin(self) -> Self { self.sin() }
            #[inline(always)] fn m_cos(self) -> Self { self.cos() }
            #[inline(always)] fn m_tan(self) -> Self { self.tan() }
            #[inline(always)] fn m_sincos(self) -> (Self, Self) { self.sin_cos() }
            #[inline(always)] fn m_pow(self, y: Self) -> Self { self.powf(y) }
            const ONE: Self = 1.0;
            #[inline(always)] fn m_fma(self, b: Self, c: Self) -> Self { self.mul_add(b, c) }
            #[inline(always)] fn m_floor(self) -> Self { self.floor() }
            #[inline(always)] fn m_ceil(self) -> Self { self.ceil() }
            #[inline(always)] fn m_round(self) -> Self { self.round() }
            #[inline(always)] fn m_trunc(self) -> Self { self.trunc() }
            #[inline(always)] fn m_abs(self) -> Self { self.abs() }
            #[inline(always)] fn m_min(self, y: Self) -> Self { self.min(y) }
            #[inline(always)] fn m_max(self, y: Self) -> Self { self.max(y) }
            #[inline(always)] fn m_copysign(self, y: Self) -> Self { self.copysign(y) }
            #[inline(always)] fn m_hypot(self, y: Self) -> Self { self.hypot(y) }
            #[inline(always)] fn m_atan2(self, x: Self) -> Self { self.atan2(x) }
            #[inline(always)] fn m_erf(self) -> Self { $erf(self) }
        }
    };
}
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
host_float!(f32, libm::erff);
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
host_float!(f64, libm::erf);

// ---------------------------------------------------------------------------
// AMD GPUs: the `libm` crate (pure Rust), compiled into the code object.

#[cfg(target_arch = "amdgpu")]
macro_rules! amd_float {
    ($t:ty, $sqrt:path, $exp:path, $exp2:path, $log:path, $log2:path, $log10:path, $sin:path, $cos:path,
     $tan:path, $sincos:path, $pow:path, $fma:path, $floor:path, $ceil:path, $round:path, $trunc:path,
     $abs:path, $min:path, $max:path, $copysign:path, $hypot:path, $atan2:path, $erf:path) => {
        impl sealed::Sealed for $t {}
        impl Float for $t {
            #[inline(always)] fn m_sqrt(self) -> Self { $sqrt(self) }
            #[inline(always)] fn m_rsqrt(self) -> Self { 1.0 / $sqrt(self) }
            #[inline(always)] fn m_exp(self) -> Self { $exp(self) }
            #[inline(always)] fn m_exp2(self) -> Self { $exp2(self) }
            #[inline(always)] fn m_log(self) -> Self { $log(self) }
            #[inline(always)] fn m_log2(self) -> Self { $log2(self) }
            #[inline(always)] fn m_log10(self) -> Self { $log10(self) }
            #[inline(always)] fn m_sin(self) -> Self { $sin(self) }
            #[inline(always)] fn m_cos(self) -> Self { $cos(self) }
            #[inline(always)] fn m_tan(self) -> Self { $tan(self) }
            #[inline(always)] fn m_sincos(self) -> (Self, Self) { $sincos(self) }
            #[inline(always)] fn m_pow(self, y: Self) -> Self { $pow(self, y) }
            const ONE: Self = 1.0;
            #[inline(always)] fn m_fma(self, b: Self, c: Self) -> Self { $fma(self, b, c) }
            #[inline(always)] fn m_floor(self) -> Self { $floor(self) }
            #[inline(always)] fn m_ceil(self) -> Self { $ceil(self) }
            #[inline(always)] fn m_round(self) -> Self { $round(self) }
            #[inline(always)] fn m_trunc(self) -> Self { $trunc(self) }
            #[inline(always)] fn m_abs(self) -> Self { $abs(self) }
            #[inline(always)] fn m_min(self, y: Self) -> Self { $min(self, y) }
            #[inline(always)] fn m_max(self, y: Self) -> Self { $max(self, y) }
            #[inline(always)] fn m_copysign(self, y: Self) -> Self { $copysign(self, y) }
            #[inline(always)] fn m_hypot(self, y: Self) -> Self { $hypot(self, y) }
            #[inline(always)] fn m_atan2(self, x: Self) -> Self { $atan2(self, x) }
            #[inline(always)] fn m_erf(self) -> Self { $erf(self) }
        }
    };
}
#[cfg(target_arch = "amdgpu")]
amd_float!(f32, libm::sqrtf, libm::expf, libm::exp2f, libm::logf, libm::log2f, libm::log10f, libm::sinf,
    libm::cosf, libm::tanf, libm::sincosf, libm::powf, libm::fmaf, libm::floorf, libm::ceilf, libm::roundf,
    libm::truncf, libm::fabsf, libm::fminf, libm::fmaxf, libm::copysignf, libm::hypotf, libm::atan2f, libm::erff);
#[cfg(target_arch = "amdgpu")]
amd_float!(f64, libm::sqrt, libm::exp, libm::exp2, libm::log, libm::log2, libm::log10, libm::sin, libm::cos,
    libm::tan, libm::sincos, libm::pow, libm::fma, libm::floor, libm::ceil, libm::round, libm::trunc,
    libm::fabs, libm::fmin, libm::fmax, libm::copysign, libm::hypot, libm::atan2, libm::erf);

// ---------------------------------------------------------------------------
// Device: PTX instructions through LLVM intrinsics, libdevice for the rest.

#[cfg(target_arch = "nvptx64")]
mod nv {
    extern "C" {
        #[link_name = "llvm.sqrt.f32"] pub fn sqrtf(x: f32) -> f32;
        #[link_name = "llvm.sqrt.f64"] pub fn sqrt(x: f64) -> f64;
        #[link_name = "llvm.fma.f32"] pub fn fmaf(a: f32, b: f32, c: f32) -> f32;
        #[link_name = "llvm.fma.f64"] pub fn fma(a: f64, b: f64, c: f64) -> f64;
        #[link_name = "llvm.floor.f32"] pub fn floorf(x: f32) -> f32;
        #[link_name = "llvm.floor.f64"] pub fn floor(x: f64) -> f64;
        #[link_name = "llvm.ceil.f32"] pub fn ceilf(x: f32) -> f32;
        #[link_name = "llvm.ceil.f64"] pub fn ceil(x: f64) -> f64;
        #[link_name = "llvm.round.f32"] pub fn roundf(x: f32) -> f32;
        #[link_name = "llvm.round.f64"] pub fn round(x: f64) -> f64;
        #[link_name = "llvm.trunc.f32"] pub fn truncf(x: f32) -> f32;
        #[link_name = "llvm.trunc.f64"] pub fn trunc(x: f64) -> f64;
        #[link_name = "llvm.fabs.f32"] pub fn fabsf(x: f32) -> f32;
        #[link_name = "llvm.fabs.f64"] pub fn fabs(x: f64) -> f64;
        #[link_name = "llvm.minnum.f32"] pub fn fminf(x: f32, y: f32) -> f32;
        #[link_name = "llvm.minnum.f64"] pub fn fmin(x: f64, y: f64) -> f64;
        #[link_name = "llvm.maxnum.f32"] pub fn fmaxf(x: f32, y: f32) -> f32;
        #[link_name = "llvm.maxnum.f64"] pub fn fmax(x: f64, y: f64) -> f64;
        #[link_name = "llvm.copysign.f32"] pub fn copysignf(x: f32, y: f32) -> f32;
        #[link_name = "llvm.copysign.f64"] pub fn copysign(x: f64, y: f64) -> f64;

        pub fn __nv_rsqrtf(x: f32) -> f32;
        pub fn __nv_rsqrt(x: f64) -> f64;
        pub fn __nv_expf(x: f32) -> f32;
        pub fn __nv_exp(x: f64) -> f64;
        pub fn __nv_exp2f(x: f32) -> f32;
        pub fn __nv_exp2(x: f64) -> f64;
        pub fn __nv_logf(x: f32) -> f32;
        pub fn __nv_log(x: f64) -> f64;
        pub fn __nv_log2f(x: f32) -> f32;
        pub fn __nv_log2(x: f64) -> f64;
        pub fn __nv_log10f(x: f32) -> f32;
        pub fn __nv_log10(x: f64) -> f64;
        pub fn __nv_sinf(x: f32) -> f32;
        pub fn __nv_sin(x: f64) -> f64;
        pub fn __nv_cosf(x: f32) -> f32;
        pub fn __nv_cos(x: f64) -> f64;
        pub fn __nv_tanf(x: f32) -> f32;
        pub fn __nv_tan(x: f64) -> f64;
        pub fn __nv_sincosf(x: f32, s: *mut f32, c: *mut f32);
        pub fn __nv_sincos(x: f64, s: *mut f64, c: *mut f64);
        pub fn __nv_powf(x: f32, y: f32) -> f32;
        pub fn __nv_pow(x: f64, y: f64) -> f64;
        pub fn __nv_hypotf(x: f32, y: f32) -> f32;
        pub fn __nv_hypot(x: f64, y: f64) -> f64;
        pub fn __nv_atan2f(y: f32, x: f32) -> f32;
        pub fn __nv_atan2(y: f64, x: f64) -> f64;
        pub fn __nv_erff(x: f32) -> f32;
        pub fn __nv_erf(x: f64) -> f64;

        pub fn __nv_fast_expf(x: f32) -> f32;
        pub fn __nv_fast_exp10f(x: f32) -> f32;
        pub fn __nv_fast_logf(x: f32) -> f32;
        pub fn __nv_fast_log2f(x: f32) -> f32;
        pub fn __nv_fast_log10f(x: f32) -> f32;
        pub fn __nv_fast_sinf(x: f32) -> f32;
        pub fn __nv_fast_cosf(x: f32) -> f32;
        pub fn __nv_fast_tanf(x: f32) -> f32;
        pub fn __nv_fast_sincosf(x: f32, s: *mut f32, c: *mut f32);
        pub fn __nv_fast_powf(x: f32, y: f32) -> f32;
        pub fn __nv_fast_fdividef(x: f32, y: f32) -> f32;
    }
}

#[cfg(target_arch = "nvptx64")]
macro_rules! dev_float {
    ($t:ty, $sqrt:ident, $rsqrt:ident, $exp:ident, $exp2:ident, $log:ident, $log2:ident, $log10:ident,
     $sin:ident, $cos:ident, $tan:ident, $sincos:ident, $pow:ident, $fma:ident, $floor:ident,
     $ceil:ident, $round:ident, $trunc:ident, $abs:ident, $min:ident, $max:ident, $copysign:ident,
     $hypot:ident, $atan2:ident, $erf:ident) => {
        impl sealed::Sealed for $t {}
        // SAFETY (every call below): the functions are pure math on
        // values, defined by LLVM (intrinsics) or linked by the device
        // linker (libdevice or the `libm` fallbacks), for every input.
        impl Float for $t {
            #[inline(always)] fn m_sqrt(self) -> Self { unsafe { nv::$sqrt(self) } }
            #[inline(always)] fn m_rsqrt(self) -> Self { unsafe { nv::$rsqrt(self) } }
            #[inline(always)] fn m_exp(self) -> Self { unsafe { nv::$exp(self) } }
            #[inline(always)] fn m_exp2(self) -> Self { unsafe { nv::$exp2(self) } }
            #[inline(always)] fn m_log(self) -> Self { unsafe { nv::$log(self) } }
            #[inline(always)] fn m_log2(self) -> Self { unsafe { nv::$log2(self) } }
            #[inline(always)] fn m_log10(self) -> Self { unsafe { nv::$log10(self) } }
            #[inline(always)] fn m_sin(self) -> Self { unsafe { nv::$sin(self) } }
            #[inline(always)] fn m_cos(self) -> Self { unsafe { nv::$cos(self) } }
            #[inline(always)] fn m_tan(self) -> Self { unsafe { nv::$tan(self) } }
            #[inline(always)]
            fn m_sincos(self) -> (Self, Self) {
                let (mut s, mut c) = (0.0, 0.0);
                // SAFETY: both pointers are to locals, valid for one write.
                unsafe { nv::$sincos(self, &mut s, &mut c) };
                (s, c)
            }
            #[inline(always)] fn m_pow(self, y: Self) -> Self { unsafe { nv::$pow(self, y) } }
            const ONE: Self = 1.0;
            #[inline(always)] fn m_fma(self, b: Self, c: Self) -> Self { unsafe { nv::$fma(self, b, c) } }
            #[inline(always)] fn m_floor(self) -> Self { unsafe { nv::$floor(self) } }
            #[inline(always)] fn m_ceil(self) -> Self { unsafe { nv::$ceil(self) } }
            #[inline(always)] fn m_round(self) -> Self { unsafe { nv::$round(self) } }
            #[inline(always)] fn m_trunc(self) -> Self { unsafe { nv::$trunc(self) } }
            #[inline(always)] fn m_abs(self) -> Self { unsafe { nv::$abs(self) } }
            #[inline(always)] fn m_min(self, y: Self) -> Self { unsafe { nv::$min(self, y) } }
            #[inline(always)] fn m_max(self, y: Self) -> Self { unsafe { nv::$max(self, y) } }
            #[inline(always)] fn m_copysign(self, y: Self) -> Self { unsafe { nv::$copysign(self, y) } }
            #[inline(always)] fn m_hypot(self, y: Self) -> Self { unsafe { nv::$hypot(self, y) } }
            #[inline(always)] fn m_atan2(self, x: Self) -> Self { unsafe { nv::$atan2(self, x) } }
            #[inline(always)] fn m_erf(self) -> Self { unsafe { nv::$erf(self) } }
        }
    };
}
#[cfg(all(target_arch = "nvptx64", not(offload_fast_math)))]
dev_float!(f32, sqrtf, __nv_rsqrtf, __nv_expf, __nv_exp2f, __nv_logf, __nv_log2f, __nv_log10f, __nv_sinf,
    __nv_cosf, __nv_tanf, __nv_sincosf, __nv_powf, fmaf, floorf, ceilf, roundf, truncf, fabsf,
    fminf, fmaxf, copysignf, __nv_hypotf, __nv_atan2f, __nv_erff);
// `cargo offload --fast-math` (nvcc's `-use_fast_math`): f32 `exp`, `log`,
// `log2`, `log10`, `sin`, `cos`, `tan`, `sincos` and `pow` become the
// intrinsics of [`fast`], as nvcc maps `expf` to `__expf` (CUDA C++
// Programming Guide, "Intrinsic Functions"); the linker also flushes f32
// denormals and approximates division and square root.
#[cfg(all(target_arch = "nvptx64", offload_fast_math))]
dev_float!(f32, sqrtf, __nv_rsqrtf, __nv_fast_expf, __nv_exp2f, __nv_fast_logf, __nv_fast_log2f, __nv_fast_log10f,
    __nv_fast_sinf, __nv_fast_cosf, __nv_fast_tanf, __nv_fast_sincosf, __nv_fast_powf, fmaf, floorf, ceilf,
    roundf, truncf, fabsf, fminf, fmaxf, copysignf, __nv_hypotf, __nv_atan2f, __nv_erff);
#[cfg(target_arch = "nvptx64")]
dev_float!(f64, sqrt, __nv_rsqrt, __nv_exp, __nv_exp2, __nv_log, __nv_log2, __nv_log10, __nv_sin, __nv_cos,
    __nv_tan, __nv_sincos, __nv_pow, fma, floor, ceil, round, trunc, fabs, fmin, fmax, copysign,
    __nv_hypot, __nv_atan2, __nv_erf);

/// CUDA's fast single-precision intrinsics (`__expf`, `__sinf`, …; accuracy
/// per function below, from the CUDA Math API's "Intrinsic Functions"): on
/// the GPU with libdevice, hardware approximations (`ex2.approx.ftz.f32`,
/// `sin.approx.ftz.f32`, `lg2.approx.ftz.f32`) that flush denormals to zero;
/// elsewhere the accurate functions.
///
/// Error bounds (CUDA C++ Programming Guide, "Intrinsic Functions", single
/// precision), checked by the `math` test:
///
/// | function | maximum error |
/// | --- | --- |
/// | `exp` (`__expf`) | 2 + ⌊\|1.173·x\|⌋ ULP |
/// | `exp10` (`__exp10f`) | 2 + ⌊\|2.97·x\|⌋ ULP |
/// | `log`, `log2`, `log10` | 2⁻²¹·⁴¹ absolute for x in [0.5, 2], else 3 ULP (`log2`: 2 ULP) |
/// | `sin`, `cos` | 2⁻²¹·⁴¹ absolute for x in [−π, π] |
/// | `tan` | derived from `sin`/`cos`: ~2⁻²⁰ relative away from poles |
/// | `pow` | derived: `exp2(y·log2(x))` |
/// | `fdivide` (`__fdividef`) | 2 ULP for \|y\| in [2⁻¹²⁶, 2¹²⁶] |
pub mod fast {
    #[cfg(target_arch = "nvptx64")]
    use super::nv;

    macro_rules! fast {
        ($($(#[$doc:meta])* $name:ident($($a:ident),*) => $nv:ident, |$($h:ident),*| $host:expr;)*) => {$(
            $(#[$doc])*
            #[inline(always)]
            pub fn $name(x: f32 $(, $a: f32)*) -> f32 {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: pure math on values (see the parent module).
                unsafe { nv::$nv(x $(, $a)*) }
                // AMD GPUs and the host: the accurate functions.
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    #[allow(unused_parens)]
                    let ($($h),*) = (x $(, $a)*);
                    $host
                }
            }
        )*};
    }
    fast! {
        /// `__expf`: at most 2 + ⌊|1.173·x|⌋ ULP.
        exp() => __nv_fast_expf, |x| super::exp(x);
        /// `__exp10f`: at most 2 + ⌊|2.97·x|⌋ ULP.
        exp10() => __nv_fast_exp10f, |x| super::pow(10.0f32, x);
        /// `__logf`: absolute error ≤ 2^-21.41 for x in [0.5, 2], relative larger elsewhere.
        log() => __nv_fast_logf, |x| super::log(x);
        /// `__log2f`: absolute error ≤ 2^-22 for x in [0.5, 2], else 2 ULP.
        log2() => __nv_fast_log2f, |x| super::log2(x);
        /// `__log10f`: absolute error ≤ 2^-24 for x in [0.5, 2], else 3 ULP.
        log10() => __nv_fast_log10f, |x| super::log10(x);
        /// `__sinf`: absolute error ≤ 2^-21.41 for x in [-π, π], larger outside.
        sin() => __nv_fast_sinf, |x| super::sin(x);
        /// `__cosf`: absolute error ≤ 2^-21.19 for x in [-π, π], larger outside.
        cos() => __nv_fast_cosf, |x| super::cos(x);
        /// `__tanf`: `__sinf / __cosf`; their errors combined (relative ≤ 2^-19 on [-1.2, 1.2] in our tests).
        tan() => __nv_fast_tanf, |x| super::tan(x);
        /// `__powf`: `exp2(y·log2 x)` with the fast parts; relative error ≤ 2^-18 in our tests (x in [0.5, 4], |y| ≤ 4).
        pow(y) => __nv_fast_powf, |x, y| super::pow(x, y);
        /// `__fdividef(x, y)`: `x / y` within 2 ULP for |y| in [2^-126, 2^126]; 0 when 2^126 < |y| < 2^128.
        fdivide(y) => __nv_fast_fdividef, |x, y| x / y;
    }

    /// `__sincosf`: `(sin x, cos x)`.
    #[inline(always)]
    pub fn sincos(x: f32) -> (f32, f32) {
        #[cfg(target_arch = "nvptx64")]
        {
            let (mut s, mut c) = (0.0, 0.0);
            // SAFETY: both pointers are to locals, valid for one write.
            unsafe { nv::__nv_fast_sincosf(x, &mut s, &mut c) };
            (s, c)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            super::sincos(x)
        }
    }
}

/// Pure-Rust definitions of the libdevice functions used above, bound by the
/// device linker (it renames `__nv_X` to `__offload_libm_X`) when libdevice
/// is not linked.
#[cfg(target_arch = "nvptx64")]
mod fallback {
    macro_rules! f1 {
        ($($name:ident: $t:ty => $e:expr;)*) => {$(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name(x: $t) -> $t {
                let f: fn($t) -> $t = $e;
                f(x)
            }
        )*};
    }
    macro_rules! f2 {
        ($($name:ident: $t:ty, $u:ty => $e:expr;)*) => {$(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name(x: $t, y: $u) -> $t {
                let f: fn($t, $u) -> $t = $e;
                f(x, y)
            }
        )*};
    }
    f1! {
        __offload_libm_rsqrtf: f32 => |x| 1.0 / libm::sqrtf(x);
        __offload_libm_rsqrt: f64 => |x| 1.0 / libm::sqrt(x);
        __offload_libm_expf: f32 => libm::expf;
        __offload_libm_exp: f64 => libm::exp;
        __offload_libm_exp2f: f32 => libm::exp2f;
        __offload_libm_exp2: f64 => libm::exp2;
        __offload_libm_logf: f32 => libm::logf;
        __offload_libm_log: f64 => libm::log;
        __offload_libm_log2f: f32 => libm::log2f;
        __offload_libm_log2: f64 => libm::log2;
        __offload_libm_log10f: f32 => libm::log10f;
        __offload_libm_log10: f64 => libm::log10;
        __offload_libm_sinf: f32 => libm::sinf;
        __offload_libm_sin: f64 => libm::sin;
        __offload_libm_cosf: f32 => libm::cosf;
        __offload_libm_cos: f64 => libm::cos;
        __offload_libm_tanf: f32 => libm::tanf;
        __offload_libm_tan: f64 => libm::tan;
        __offload_libm_erff: f32 => libm::erff;
        __offload_libm_erf: f64 => libm::erf;
        __offload_libm_fast_expf: f32 => libm::expf;
        __offload_libm_fast_exp10f: f32 => libm::exp10f;
        __offload_libm_fast_logf: f32 => libm::logf;
        __offload_libm_fast_log2f: f32 => libm::log2f;
        __offload_libm_fast_log10f: f32 => libm::log10f;
        __offload_libm_fast_sinf: f32 => libm::sinf;
        __offload_libm_fast_cosf: f32 => libm::cosf;
        __offload_libm_fast_tanf: f32 => libm::tanf;
    }
    f2! {
        __offload_libm_powf: f32, f32 => libm::powf;
        __offload_libm_pow: f64, f64 => libm::pow;
        __offload_libm_hypotf: f32, f32 => libm::hypotf;
        __offload_libm_hypot: f64, f64 => libm::hypot;
        __offload_libm_atan2f: f32, f32 => libm::atan2f;
        __offload_libm_atan2: f64, f64 => libm::atan2;
        __offload_libm_fast_powf: f32, f32 => libm::powf;
        __offload_libm_fast_fdividef: f32, f32 => |x, y| x / y;
    }

    /// # Safety
    /// `s` and `c` are valid for one write each.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn __offload_libm_sincosf(x: f32, s: *mut f32, c: *mut f32) {
        let (a, b) = libm::sincosf(x);
        // SAFETY: guaranteed by the caller.
        unsafe { (*s, *c) = (a, b) };
    }
    /// # Safety
    /// `s` and `c` are valid for one write each.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn __offload_libm_fast_sincosf(x: f32, s: *mut f32, c: *mut f32) {
        let (a, b) = libm::sincosf(x);
        // SAFETY: guaranteed by the caller.
        unsafe { (*s, *c) = (a, b) };
    }
    /// # Safety
    /// `s` and `c` are valid for one write each.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn __offload_libm_sincos(x: f64, s: *mut f64, c: *mut f64) {
        let (a, b) = libm::sincos(x);
        // SAFETY: guaranteed by the caller.
        unsafe { (*s, *c) = (a, b) };
    }
}
