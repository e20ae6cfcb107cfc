//! Kernel symbols, derived identically by the proc macros (host and device
//! passes, possibly different compilers) and by `cargo offload`.

pub use crate::hash::hash32;

/// [`crate::hash::fnv64_parts`] of strings: the 64-bit hash the symbol hash
/// [`hash32`] folds.
pub fn fnv1a(parts: &[&str]) -> u64 {
    crate::hash::fnv64_parts(parts)
}

/// The device symbol of one instantiation of a generic kernel:
/// `<base>_<hash of args>`, where `base` is the generic kernel's symbol
/// (`__offload_kernel_<crate>_<fn>_<hash>`) and `args` the tuple of its
/// type arguments as `core::any::type_name` spells it, e.g. `(f32,)` or
/// `(f64, my_crate::Vec3)` (the host binary's v0 symbol names, demangled,
/// spell it the same way).
pub fn instance(base: &str, args: &str) -> String {
    format!("{base}_{:08x}", hash32(&[args]))
}

/// The file, in `dir`, listing the instantiations of the generic kernel
/// `base` that host code uses: lines `<args>\t<binary>`.
pub fn instances_file(dir: &std::path::Path, base: &str) -> std::path::PathBuf {
    dir.join(format!("{base}.txt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_symbols_are_stable_and_distinct() {
        assert_eq!(instance("__offload_kernel_c_k_1", "(f32,)"), instance("__offload_kernel_c_k_1", "(f32,)"));
        assert_ne!(instance("__offload_kernel_c_k_1", "(f32,)"), instance("__offload_kernel_c_k_1", "(f64,)"));
        assert!(instance("b", "f32").starts_with("b_") && instance("b", "f32").len() == 2 + 8);
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
        // Every part counts (the macros hash crate, file, line, column, name).
        let parts = ["c", "src/a.rs", "3", "4", "add"];
        assert_eq!(fnv1a(&parts), fnv1a(&parts));
        assert_ne!(fnv1a(&parts), fnv1a(&["c", "src/b.rs", "3", "4", "add"]));
        // The macros and the runtime agree on these bits (computed
        // independently in Python).
        assert_eq!(instance("__offload_kernel_c_k_1", "(f32,)"), "__offload_kernel_c_k_1_4e67736d");
    }
}
