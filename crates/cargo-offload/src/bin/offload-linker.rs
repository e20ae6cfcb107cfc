//! `offload-linker`: the device linker `cargo offload` gives rustc with
//! `-C linker=…` for GPU targets. See the `offload-linker` crate.
#![deny(unsafe_code)]

fn main() {
    std::process::exit(offload_linker::main_with_args(std::env::args().skip(1)));
}
