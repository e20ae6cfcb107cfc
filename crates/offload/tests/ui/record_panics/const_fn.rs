//! `#[record_panics]` cannot go on a `const fn`: the recorder is not `const`.
#[offload::record_panics]
const fn check(i: usize) {
    assert!(i < 4, "i = {}", i);
}

fn main() {
    check(1);
}
