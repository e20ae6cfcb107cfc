//! Compile-fail tests of the safe API (trybuild): each `tests/ui/*.rs` must
//! fail to compile with the error in its `.stderr` (host pass).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
