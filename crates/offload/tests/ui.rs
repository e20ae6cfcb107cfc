//! Compile-fail tests (trybuild): each `tests/ui/**/*.rs` must fail to
//! compile with the error in its `.stderr` (host pass; `TRYBUILD=overwrite`
//! rewrites them).
//!
//! trybuild builds `offload` and its dependencies again in a project of its
//! own, one to two minutes on two cores: the test is `#[ignore]`d, out of the
//! README's quick test command, and CI runs it with `--include-ignored`.
//!
//! - `tests/ui/*.rs`: the safe API (a `DisjointSlice` stays on its thread).
//! - `tests/ui/async/`: the borrow rules of queued work (docs/async.md):
//!   host memory only in a scope, borrowed until it ends.
//! - `tests/ui/kernel/`, `derive/`, `device_global/`, `host/`,
//!   `record_panics/`: every diagnostic of the macros of `offload-macros`
//!   (`#[kernel]`, `#[derive(DeviceCopy)]`, `#[device_global]`, `#[host]`,
//!   `#[record_panics]`), one case per message or rule.

// Host-only: `cargo offload test` also builds this target for the GPU,
// where its dependencies (std) do not exist.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod host {
    #[test]
    #[ignore = "builds offload's dependencies again (a minute): `cargo test -p offload --test ui -- --include-ignored`"]
    fn ui() {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/*.rs");
        for macro_dir in ["async", "kernel", "derive", "device_global", "host", "record_panics"] {
            t.compile_fail(format!("tests/ui/{macro_dir}/*.rs"));
        }
    }
}
