//! Launch configuration: grid and block sizes. Plain data, available on
//! both sides so that `use offload::LaunchConfig` compiles in the device pass.

use crate::device::dim::Dim3;

/// Threads per block chosen by [`for_len`]: a multiple of the warp size (32)
/// that keeps every SM of current NVIDIA GPUs fully occupied for simple
/// kernels.
pub const DEFAULT_BLOCK: u32 = 256;

/// How a kernel is launched: `grid` blocks of `block` threads each (CUDA's
/// `<<<grid, block, shared_mem_bytes>>>`).
///
/// Limits, checked before every launch on every backend (CUDA C++ Programming
/// Guide, "Technical Specifications per Compute Capability"): `block.x` and
/// `block.y` ≤ 1024, `block.z` ≤ 64, at most 1024 threads per block, no zero
/// block extent; `grid.x` ≤ 2³¹−1, `grid.y` and `grid.z` ≤ 65535; and
/// offload's own limit of `isize::MAX` threads in all (device code counts
/// threads in `usize`). A grid with a zero extent launches nothing and
/// returns `Ok(())`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig { grid: grid.into(), block: block.into(), shared_mem_bytes: 0 }
    }

    /// A 1-D launch with at least `n` threads: blocks of [`DEFAULT_BLOCK`]
    /// threads, `ceil(n / 256)` blocks. `for_len(0)` launches nothing.
    pub fn for_len(n: usize) -> Self {
        let blocks = n.div_ceil(DEFAULT_BLOCK as usize);
        let grid = u32::try_from(blocks).unwrap_or(u32::MAX);
        LaunchConfig::new(grid, DEFAULT_BLOCK)
    }

    /// The total number of threads, `grid.volume() * block.volume()`.
    pub fn threads(&self) -> u64 {
        self.grid.volume().saturating_mul(self.block.volume())
    }

    /// Checks the limits listed on [`LaunchConfig`]; `Err` holds the reason.
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
    pub fn validate(&self) -> core::result::Result<(), std::string::String> {
        let b = self.block;
        if b.x == 0 || b.y == 0 || b.z == 0 {
            return Err(std::format!("block {b} has a zero extent; every block needs at least one thread"));
        }
        if b.x > 1024 || b.y > 1024 || b.z > 64 {
            return Err(std::format!("block {b} exceeds the per-dimension limits 1024x1024x64"));
        }
        if b.volume() > 1024 {
            return Err(std::format!("block {b} has {} threads; the limit is 1024 per block", b.volume()));
        }
        let g = self.grid;
        if g.x > i32::MAX as u32 || g.y > 65535 || g.z > 65535 {
            return Err(std::format!("grid {g} exceeds the limits 2147483647x65535x65535"));
        }
        // Device code counts threads in `usize` (`global_size`) and steps
        // grid-stride loops by that count without overflow checks.
        let threads = g.volume() as u128 * b.volume() as u128;
        if threads > isize::MAX as u128 {
            return Err(std::format!(
                "grid {g} of blocks {b} has {threads} threads; offload's limit is {} (isize::MAX)",
                isize::MAX
            ));
        }
        Ok(())
    }
}

/// Shorthand for [`LaunchConfig::for_len`]: one thread per element of an
/// `n`-element problem, 1-D.
pub fn for_len(n: usize) -> LaunchConfig {
    LaunchConfig::for_len(n)
}

impl From<(Dim3, Dim3)> for LaunchConfig {
    fn from((grid, block): (Dim3, Dim3)) -> Self {
        LaunchConfig::new(grid, block)
    }
}

/// What a kernel's launcher takes as its first argument: a [`LaunchConfig`],
/// or `(grid, block)` as two [`Dim3`]s. Implement it for a type of your own
/// to pass that directly.
///
/// A call whose first argument is something else is usually a kernel
/// calling another kernel: inside a kernel, another kernel's name is its
/// host launcher, and a GPU thread cannot launch kernels. The error says
/// so.
#[diagnostic::on_unimplemented(
    message = "a kernel cannot call or launch another kernel, and a launcher's first argument is a launch \
               configuration: `{Self}` is not one",
    label = "not a launch configuration",
    note = "inside a kernel, another kernel's name is its host launcher: move the code both kernels need into a \
            plain `fn` and call that from both",
    note = "from host code, launch with `kernel(LaunchConfig::for_len(n), args…)` or \
            `kernel(LaunchConfig::new(grid, block), args…)`"
)]
pub trait IntoLaunchConfig {
    /// The configuration.
    fn into_launch_config(self) -> LaunchConfig;
}

impl IntoLaunchConfig for LaunchConfig {
    fn into_launch_config(self) -> LaunchConfig {
        self
    }
}

impl IntoLaunchConfig for (Dim3, Dim3) {
    fn into_launch_config(self) -> LaunchConfig {
        LaunchConfig::new(self.0, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::dim::Dim3;

    #[test]
    fn for_len_covers_every_element() {
        for n in [0usize, 1, 255, 256, 257, 1 << 24] {
            let c = for_len(n);
            assert!(c.threads() as usize >= n);
            assert!(c.threads() as usize <= n + 255);
            assert_eq!(c.block, Dim3::new(256, 1, 1));
        }
    }

    #[test]
    fn limits() {
        assert!(LaunchConfig::new(1u32, 1024u32).validate().is_ok());
        assert!(LaunchConfig::new(1u32, 1025u32).validate().unwrap_err().contains("1024"));
        assert!(LaunchConfig::new(1u32, (32u32, 32u32, 2u32)).validate().unwrap_err().contains("2048 threads"));
        assert!(LaunchConfig::new(1u32, (1u32, 1u32, 65u32)).validate().is_err());
        assert!(LaunchConfig::new(1u32, 0u32).validate().unwrap_err().contains("zero extent"));
        assert!(LaunchConfig::new((1u32, 65536u32), 1u32).validate().is_err());
        assert!(LaunchConfig::new(u32::MAX, 1u32).validate().is_err());
        let huge = LaunchConfig::new(Dim3::new(i32::MAX as u32, 65535, 65535), Dim3::new(1024, 1, 1));
        let e = huge.validate().unwrap_err();
        assert!(e.contains("has 9444444733164249676800 threads") && e.contains("isize::MAX"), "{e}");
        assert!(LaunchConfig::new(0u32, 32u32).validate().is_ok());
    }
}
