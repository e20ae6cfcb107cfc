//! `#[record_panics]` goes on a function.
#[offload::record_panics]
struct Checked(u32);

fn main() {
    let _ = Checked(1).0;
}
