//! Grid and block geometry.

/// A 3-D extent or index, as CUDA's `dim3` / `uint3`: `x` varies fastest.
///
/// Converts from `u32` (`(n, 1, 1)`), `(u32, u32)` and `(u32, u32, u32)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Dim3 {
    /// Extent or index along x (fastest varying).
    pub x: u32,
    /// Extent or index along y.
    pub y: u32,
    /// Extent or index along z (slowest varying).
    pub z: u32,
}

impl Dim3 {
    /// `Dim3 { x, y, z }`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// `x * y * z` as a `u64` (never overflows).
    pub const fn volume(&self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

impl core::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}x{}x{}", self.x, self.y, self.z)
    }
}
