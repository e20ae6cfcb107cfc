//! `x.sin()` in kernels: `std`'s float method names, for the device.
//!
//! `f32::sin` and its kin are methods of `std`, which does not exist on the
//! GPU: in the device pass, `x.sin()` is rustc's "no method named `sin`
//! found for type `f32`". This trait gives those names to `f32` and `f64`
//! on every target, implemented by the free functions of
//! [`math`](crate::math) (the same code, limits and accuracy, see there).
//!
//! - With the trait in scope (`use offload::prelude::*;` brings it, or
//!   `use offload::math::methods::FloatMethods;`), `x.sin()` compiles in both
//!   passes.
//!   On the host `std`'s own methods take precedence (Rust picks an inherent
//!   method before a trait's), so the host fallback calls `std`, as
//!   `offload::math` does there.
//! - Without it, rustc's error in the device pass names the trait, "trait
//!   `FloatMethods` which provides `sin` is implemented but not in scope;
//!   perhaps you want to import it: `use offload::math::methods::FloatMethods;`",
//!   which points to [`math`](crate::math).
//!
//! `std` methods without an equivalent in [`math`](crate::math) (`asin`,
//! `sinh`, `cbrt`, `exp_m1`, …) are not provided; `abs`, `min`, `max`,
//! `copysign`, `signum`, `clamp` are `core`'s and work everywhere already.
//!
//! Another trait in scope that gives `f32` these names (`num_traits::Float`
//! on the device, say) makes a call ambiguous in the device pass (rustc's
//! E0034): import one of the two, or call `offload::math::sin(x)`.

use super::{
    atan2, ceil, cos, exp, exp2, floor, fma, hypot, log, log10, log2, pow, powi, round, sin, sincos, sqrt, tan, trunc,
};

/// `std`'s float methods for `f32` and `f64` in kernels: each is the
/// [`math`](crate::math) function named in its documentation. See the
/// module documentation of [`math`](crate::math) for accuracy.
pub trait FloatMethods: Copy + sealed::Sealed {
    /// Square root: [`math::sqrt`](crate::math::sqrt).
    fn sqrt(self) -> Self;
    /// `e^self`: [`math::exp`](crate::math::exp).
    fn exp(self) -> Self;
    /// `2^self`: [`math::exp2`](crate::math::exp2).
    fn exp2(self) -> Self;
    /// Natural logarithm: [`math::log`](crate::math::log).
    fn ln(self) -> Self;
    /// Base-2 logarithm: [`math::log2`](crate::math::log2).
    fn log2(self) -> Self;
    /// Base-10 logarithm: [`math::log10`](crate::math::log10).
    fn log10(self) -> Self;
    /// Sine: [`math::sin`](crate::math::sin).
    fn sin(self) -> Self;
    /// Cosine: [`math::cos`](crate::math::cos).
    fn cos(self) -> Self;
    /// Tangent: [`math::tan`](crate::math::tan).
    fn tan(self) -> Self;
    /// `(sin self, cos self)`: [`math::sincos`](crate::math::sincos).
    fn sin_cos(self) -> (Self, Self);
    /// `self^n`: [`math::pow`](crate::math::pow).
    fn powf(self, n: Self) -> Self;
    /// `self^n` for an integer `n`: [`math::powi`](crate::math::powi).
    fn powi(self, n: i32) -> Self;
    /// `self·a + b` with one rounding: [`math::fma`](crate::math::fma).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Largest integer `≤ self`: [`math::floor`](crate::math::floor).
    fn floor(self) -> Self;
    /// Smallest integer `≥ self`: [`math::ceil`](crate::math::ceil).
    fn ceil(self) -> Self;
    /// Nearest integer, halves away from zero: [`math::round`](crate::math::round).
    fn round(self) -> Self;
    /// Integer part: [`math::trunc`](crate::math::trunc).
    fn trunc(self) -> Self;
    /// `sqrt(self² + other²)`: [`math::hypot`](crate::math::hypot).
    fn hypot(self, other: Self) -> Self;
    /// Angle of the point `(other, self)`, `self` being y as in `std`:
    /// [`math::atan2`](crate::math::atan2).
    fn atan2(self, other: Self) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

macro_rules! methods {
    ($($t:ty),*) => {$(
        impl FloatMethods for $t {
            #[inline(always)]
            fn sqrt(self) -> Self { sqrt(self) }
            #[inline(always)]
            fn exp(self) -> Self { exp(self) }
            #[inline(always)]
            fn exp2(self) -> Self { exp2(self) }
            #[inline(always)]
            fn ln(self) -> Self { log(self) }
            #[inline(always)]
            fn log2(self) -> Self { log2(self) }
            #[inline(always)]
            fn log10(self) -> Self { log10(self) }
            #[inline(always)]
            fn sin(self) -> Self { sin(self) }
            #[inline(always)]
            fn cos(self) -> Self { cos(self) }
            #[inline(always)]
            fn tan(self) -> Self { tan(self) }
            #[inline(always)]
            fn sin_cos(self) -> (Self, Self) { sincos(self) }
            #[inline(always)]
            fn powf(self, n: Self) -> Self { pow(self, n) }
            #[inline(always)]
            fn powi(self, n: i32) -> Self { powi(self, n) }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self { fma(self, a, b) }
            #[inline(always)]
            fn floor(self) -> Self { floor(self) }
            #[inline(always)]
            fn ceil(self) -> Self { ceil(self) }
            #[inline(always)]
            fn round(self) -> Self { round(self) }
            #[inline(always)]
            fn trunc(self) -> Self { trunc(self) }
            #[inline(always)]
            fn hypot(self, other: Self) -> Self { hypot(self, other) }
            #[inline(always)]
            fn atan2(self, other: Self) -> Self { atan2(self, other) }
        }
    )*};
}
methods!(f32, f64);

#[cfg(test)]
mod tests {
    use super::FloatMethods;

    #[test]
    fn each_method_is_std_s_on_the_host() {
        // Called through the trait (on the host a plain `x.sin()` is
        // `std`'s inherent method): the device's code path, run on the host.
        let x = 0.7f64;
        let close = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0);
        assert!(close(FloatMethods::sin(x), x.sin()) && close(FloatMethods::cos(x), x.cos()));
        assert!(close(FloatMethods::ln(x), x.ln()) && close(FloatMethods::powf(x, 2.5), x.powf(2.5)));
        assert_eq!(FloatMethods::powi(1.5f32, 3), 3.375);
        assert_eq!(FloatMethods::mul_add(2.0f32, 3.0, 1.0), 7.0);
        assert_eq!(FloatMethods::round(-2.5f64), -3.0);
        assert!(close(FloatMethods::atan2(1.0, -1.0), 1.0f64.atan2(-1.0)));
        let (s, c) = FloatMethods::sin_cos(x);
        assert!(close(s, x.sin()) && close(c, x.cos()));
    }
}
