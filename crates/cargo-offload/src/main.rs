//! `cargo offload`: build, run and test Rust crates whose kernels run on the
//! GPU. See the README for the model.
//!
//! Who calls whom (`phases/mod.rs` says more):
//!
//! ```text
//! user ─ cargo offload run ─ cargo phase ─┬─ device cargo ─ device phase (this executable) ─ rustc ─ offload-linker
//!                                         ├─ embed phase: images → one object per final binary
//!                                         └─ host cargo ─── host phase (this executable) ─── rustc ─ system linker
//! ```
//!
//! This process is one of those phases: the cargo phase (`cargo offload …`,
//! run by the user) or, when cargo runs it as a rustc wrapper
//! (`__OFFLOAD_PHASE` set by the cargo phase), the device or the host side
//! of rustc (for the host pass's dependencies, the crate cache's side:
//! `phases/rustc_dep.rs`); cargo's probes (`--print`, `-vV`) go to rustc untouched.
//! `main` only decides which.
#![deny(unsafe_code)]

mod arg;
mod binary;
mod cache_gc;
mod child;
mod clean;
mod cli;
mod cmd;
mod crate_cache;
mod devflags;
mod device;
mod diagnostic;
mod doctor;
mod errors;
mod generic;
mod handoff;
mod host;
mod host_only;
mod interrupt;
mod llvm;
mod messages;
mod output;
mod phases;
mod plan;
mod ptx;
mod select;
mod status;
mod sysroot;
mod toolchain;
mod workspace;

use handoff::Phase;
use phases::rustc_dep::Layer;

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let code = match Phase::of_invocation(&argv) {
        None => phases::cargo::main(argv),
        Some(phase) => {
            // `<wrapper> <rustc> <args…>`; rustc takes UTF-8 arguments only.
            let mut rest = argv.into_iter().skip(1).map(|a| a.to_string_lossy().into_owned());
            let mut rustc = rest.next().unwrap_or_default();
            // The host pass with the crate cache: cargo-offload is
            // `RUSTC_WRAPPER` too (`phases/rustc_dep.rs`).
            let layer = (phase == Some(Phase::Host)).then(|| phases::rustc_dep::layer(&rustc));
            if layer == Some(Layer::MemberOuter) {
                rustc = rest.next().unwrap_or_default();
            }
            let args = arg::Args::new(rest.collect());
            errors::finish(match phase {
                _ if layer == Some(Layer::Dependency) => phases::rustc_dep::run(&rustc, args),
                _ if args.is_query() => phases::rustc::run(&rustc, args.as_slice()),
                Some(Phase::Device) => phases::rustc_device::run(&rustc, args),
                Some(Phase::Host) => phases::rustc_host::run(&rustc, args),
                None => phases::rustc::run(&rustc, args.as_slice()),
            })
        }
    };
    std::process::exit(code);
}
