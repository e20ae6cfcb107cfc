//! Compile-fail tests (trybuild): each `tests/ui/**/*.rs` must fail to
//! compile with the error in its `.stderr` (host pass; `TRYBUILD=overwrite`
//! rewrites them).
//!
//! - `tests/ui/*.rs`: the safe API (a `DisjointSlice` stays on its thread).
//! - `tests/ui/kernel/`, `derive/`, `device_global/`, `host/`: every
//!   diagnostic of the macros of `offload-macros` (`#[kernel]`,
//!   `#[derive(DeviceCopy)]`, `#[device_global]`, `#[host]`), one case per
//!   message or rule.

// Host-only: `cargo offload test` also builds this target for the GPU,
// where its dependencies (std) do not exist.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod host {
    #[test]
    fn ui() {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/*.rs");
        for macro_dir in ["kernel", "derive", "device_global", "host"] {
            t.compile_fail(format!("tests/ui/{macro_dir}/*.rs"));
        }
    }
}
