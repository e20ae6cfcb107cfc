//! f32 functions that kernels need beyond `core`'s arithmetic, with the same
//! names on the device and on the host fallback.
//!
//! **Interim and minimal.** Only what `examples/minibude` needs: [`sqrt`],
//! [`sin`] and [`cos`]. The device programming model work (issue 3: math
//! functions through libdevice) is to replace this module; keep these names
//! and meanings so that kernels written against it keep compiling.
//!
//! | function | device, default | device, `cargo offload --fast-math` | host fallback |
//! | --- | --- | --- | --- |
//! | `sqrt` | `sqrt.rn.f32` (correctly rounded) | `sqrt.approx.ftz.f32` | `f32::sqrt` |
//! | `sin`, `cos` | `sinf`/`cosf` of the libm port in `compiler_builtins` (musl's algorithms, < 1 ulp) | `sin.approx.ftz.f32` / `cos.approx.ftz.f32` | `f32::sin` / `f32::cos` |
//!
//! The approximate forms are what nvcc's `-use_fast_math` selects for
//! `sqrtf`, `sinf` and `cosf` (CUDA C++ Programming Guide, "Intrinsic
//! Functions"); PTX ISA, `sin`: maximum absolute error 2^-20.5 over
//! -100π..100π.

/// Square root of `x` (NaN for `x < 0`).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    imp::sqrt(x)
}

/// Sine of `x` radians.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    imp::sin(x)
}

/// Cosine of `x` radians.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    imp::cos(x)
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod imp {
    #[inline(always)]
    pub fn sqrt(x: f32) -> f32 {
        x.sqrt()
    }
    #[inline(always)]
    pub fn sin(x: f32) -> f32 {
        x.sin()
    }
    #[inline(always)]
    pub fn cos(x: f32) -> f32 {
        x.cos()
    }
}

#[cfg(any(target_arch = "nvptx64", target_arch = "amdgpu"))]
mod imp {
    /// `llvm.sqrt.f32`; the device linker's `--fast-math` flags make the
    /// NVPTX backend emit `sqrt.approx` for it.
    #[inline(always)]
    pub fn sqrt(x: f32) -> f32 {
        core::f32::math::sqrt(x)
    }

    #[cfg(not(all(target_arch = "nvptx64", offload_fast_math)))]
    mod precise {
        // Defined by `compiler_builtins` (its libm port) for targets without a
        // system libm, which the device linker links into every image.
        extern "C" {
            fn sinf(x: f32) -> f32;
            fn cosf(x: f32) -> f32;
        }
        #[inline(always)]
        pub fn sin(x: f32) -> f32 {
            // SAFETY: a pure function of its argument.
            unsafe { sinf(x) }
        }
        #[inline(always)]
        pub fn cos(x: f32) -> f32 {
            // SAFETY: a pure function of its argument.
            unsafe { cosf(x) }
        }
    }
    #[cfg(not(all(target_arch = "nvptx64", offload_fast_math)))]
    pub use precise::{cos, sin};

    #[cfg(all(target_arch = "nvptx64", offload_fast_math))]
    mod fast {
        extern "C" {
            #[link_name = "llvm.nvvm.sin.approx.ftz.f"]
            fn sin_approx(x: f32) -> f32;
            #[link_name = "llvm.nvvm.cos.approx.ftz.f"]
            fn cos_approx(x: f32) -> f32;
        }
        #[inline(always)]
        pub fn sin(x: f32) -> f32 {
            // SAFETY: an NVVM intrinsic without preconditions (PTX `sin.approx.ftz.f32`).
            unsafe { sin_approx(x) }
        }
        #[inline(always)]
        pub fn cos(x: f32) -> f32 {
            // SAFETY: as `sin`.
            unsafe { cos_approx(x) }
        }
    }
    #[cfg(all(target_arch = "nvptx64", offload_fast_math))]
    pub use fast::{cos, sin};
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_values() {
        assert_eq!(super::sqrt(2.25), 1.5);
        assert_eq!(super::sin(0.0), 0.0);
        assert_eq!(super::cos(0.0), 1.0);
        assert!((super::sin(core::f32::consts::FRAC_PI_6) - 0.5).abs() < 1e-7);
    }
}
