//! `#[record_panics]` cannot go on a `const fn`: the recorder is not
//! `const` (a `const fn` may panic with a `&str` argument).
#[offload::record_panics]
const fn fail(why: &str) {
    panic!("{}", why);
}

fn main() {
    fail("no");
}
