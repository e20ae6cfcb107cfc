//! `#[record_panics]` takes no arguments.
#[offload::record_panics(all)]
fn check(i: usize) {
    assert!(i < 4, "i = {}", i);
}

fn main() {
    check(1);
}
