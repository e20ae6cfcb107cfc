//! Compile-fail tests of the safe API (trybuild): each `tests/ui/*.rs` must
//! fail to compile with the error in its `.stderr` (host pass).

// Host-only: `cargo offload test` also builds this target for the GPU,
// where its dependencies (std) do not exist.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod host {
    #[test]
    fn ui() {
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/*.rs");
    }
}
