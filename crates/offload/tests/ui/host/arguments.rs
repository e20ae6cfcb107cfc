//! `#[host]` takes no arguments.
#[offload::host(only)]
fn setup() {}

fn main() {}
