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

/// Prefix of every kernel symbol (offload-macros `symbol.rs`).
const KERNEL_PREFIX: &str = "__offload_kernel_";

/// `s` without a trailing `_<8 lowercase hex digits>` (a symbol hash).
fn strip_hash(s: &str) -> Option<&str> {
    let (rest, hash) = s.rsplit_once('_')?;
    (hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then_some(rest)
}

/// The path a user wrote for the kernel whose device symbol is `symbol`:
/// `__offload_kernel_<crate>_<fn>_<hash>` (or an instance of a generic
/// kernel, with `_<hash of the type arguments>` added) → `<crate>::<fn>`,
/// for messages that would otherwise name the symbol. `crates` are the
/// crate names (as `CARGO_CRATE_NAME` spells them) the symbol may start
/// with; the longest that fits is taken, since both crate and function
/// names may contain `_`. `None` if `symbol` is no kernel symbol or starts
/// with none of `crates`. The symbol keeps no module path: a kernel in
/// `mod m` of crate `c` is `c::f`, not `c::m::f`.
pub fn kernel_path(symbol: &str, crates: &[&str]) -> Option<String> {
    let named = symbol.strip_prefix(KERNEL_PREFIX)?;
    let base = strip_hash(named)?;
    // An instance's second hash first: a function name rarely ends in one.
    for rest in strip_hash(base).into_iter().chain([base]) {
        let krate = crates
            .iter()
            .filter(|c| rest.len() > c.len() + 1 && rest.starts_with(*c) && rest.as_bytes()[c.len()] == b'_')
            .max_by_key(|c| c.len());
        if let Some(c) = krate {
            return Some(format!("{c}::{}", &rest[c.len() + 1..]));
        }
    }
    None
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

    /// (symbol, crates, the user's path)
    #[test]
    fn kernel_symbols_name_the_users_function() {
        let table: &[(&str, &[&str], Option<&str>)] = &[
            ("__offload_kernel_app_saxpy_0123abcd", &["app"], Some("app::saxpy")),
            // Underscores in both names: the longest crate that fits.
            (
                "__offload_kernel_fixture_bin_only_quad_sum_6b3e2913",
                &["fixture", "fixture_bin_only"],
                Some("fixture_bin_only::quad_sum"),
            ),
            ("__offload_kernel_my_lib_my_kernel_6b3e2913", &["my", "my_lib", "core"], Some("my_lib::my_kernel")),
            // An instance of a generic kernel.
            ("__offload_kernel_app_scale_0123abcd_4e67736d", &["app"], Some("app::scale")),
            // The symbol the macro derives, with the instance hash `instance` adds.
            (&*instance("__offload_kernel_c_k_00000001", "(f32,)"), &["c"], Some("c::k")),
            ("__offload_kernel_app_saxpy_0123abcd", &["other"], None),
            ("__offload_kernel_app_saxpy", &["app"], None),
            ("__offload_global_app_X_0123abcd", &["app"], None),
            ("_ZN3app5saxpy17h0123456789abcdefE", &["app"], None),
        ];
        for (symbol, crates, want) in table {
            assert_eq!(kernel_path(symbol, crates).as_deref(), *want, "{symbol}");
        }
    }
}
