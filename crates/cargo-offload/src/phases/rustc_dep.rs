//! The wrapper's host-dependency phase: rustc for the crates of the host
//! pass outside the workspace (offload, cudarc, rayon, their proc macros
//! and build scripts), when the host pass has the crate cache on
//! (`crate_cache::HOST_VAR`, set with cargo-offload as `RUSTC_WRAPPER` by
//! `host.rs`).
//!
//! cargo runs `RUSTC_WRAPPER [RUSTC_WORKSPACE_WRAPPER] rustc args…`: a
//! workspace member comes as `<this executable> <this executable> rustc …`
//! and goes to the host phase (`rustc_host.rs`) as before ([`Layer`]);
//! any other crate comes as `<this executable> rustc …` and gets here. Its
//! command line is not changed: it is compiled exactly as a plain `cargo
//! build` compiles it (and plain cargo finds it fresh), or taken from the
//! crate cache when another project compiled it the same way. The user's
//! `RUSTC_WORKSPACE_WRAPPER` (chained for members) does not apply to it;
//! cargo's probes (`-vV`, `--print`) go to rustc untouched.

use crate::arg::Args;
use crate::crate_cache::{Served, Slot, HOST_VAR};
use crate::errors::Result;
use crate::phases::rustc;

/// Which layer of the host pass's wrappers a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The host phase for a workspace member (`RUSTC_WORKSPACE_WRAPPER`).
    Member,
    /// `RUSTC_WRAPPER` for a workspace member: the next program is this
    /// executable again, as `RUSTC_WORKSPACE_WRAPPER`.
    MemberOuter,
    /// `RUSTC_WRAPPER` for a crate outside the workspace: this phase.
    Dependency,
}

/// The layer of a host-phase process whose `<rustc>` argument is
/// `program`: with the crate cache off, cargo-offload is only the
/// workspace wrapper.
pub fn layer(program: &str) -> Layer {
    if std::env::var_os(HOST_VAR).is_none_or(|d| d.is_empty()) {
        Layer::Member
    } else if is_this_executable(program) {
        Layer::MemberOuter
    } else {
        Layer::Dependency
    }
}

/// Whether `program` is this executable (by canonical path).
fn is_this_executable(program: &str) -> bool {
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let this = std::env::current_exe().ok().and_then(|e| canon(&e));
    this.is_some() && canon(std::path::Path::new(program)) == this
}

/// The phase: rustc as it is, or the crate from the crate cache; returns
/// rustc's exit code. Each crate is logged (compiled, or `cached`) for the
/// host pass's status line.
pub fn run(rustc: &str, args: Args) -> Result<i32> {
    if args.is_query() {
        return rustc::run_command(&mut rustc::direct(rustc, args.as_slice()));
    }
    let Some(slot) = Slot::new(rustc, &args, args.as_slice()) else {
        return rustc::run_command(&mut rustc::direct(rustc, args.as_slice()));
    };
    let served = slot.serve(|argv| -> Result<(i32, Option<Vec<String>>)> {
        rustc::log_compile(&args, "");
        let (code, lines) = rustc::run_command_recorded(&mut rustc::direct(rustc, argv))?;
        Ok((code, Some(lines)))
    })?;
    Ok(match served {
        Served::Restored => rustc::log_cached(&args),
        Served::Compiled(code) => code,
    })
}
