//! The phases of `cargo offload`, one module each (cargo-miri's `phases.rs`
//! is the model). `main` only decides which phase this process is.
//!
//! Who calls whom:
//!
//! ```text
//! user ─ cargo offload run ─ cargo-offload: cargo phase (phases::cargo)
//!          ├─ device cargo ─ cargo-offload: device phase (phases::rustc_device) ─ device rustc ─ offload-linker
//!          ├─ embed phase (phases::embed): PTX (+ ptxas cubin) → bundle → ELF object per final binary
//!          └─ host cargo ─┬─ cargo-offload: host phase (phases::rustc_host) ─── host rustc ─── system linker
//!                         └─ cargo-offload: host dependencies (phases::rustc_dep) ─ crate cache or host rustc
//! ```
//!
//! - **cargo** ([`cargo`]): the user's command. Reads the command line,
//!   the workspace, the device toolchain and the devices to build for,
//!   makes the build plan (`plan.rs`), then runs the inner cargos: the
//!   device passes (`device.rs`), the collect rounds of generic kernels
//!   (`generic.rs`) and the host pass (`host.rs`). With `--dry-run` it
//!   prints the plan instead. `check` and `clippy` run the host pass first
//!   and the device passes as `cargo check`, relaying both passes'
//!   diagnostics in the user's `--message-format` (`output.rs`).
//! - **rustc, device side** ([`rustc_device`]): cargo runs the wrapper as
//!   `<wrapper> <rustc> <args…>` for every crate of the device pass
//!   (`RUSTC_WRAPPER`, `__OFFLOAD_PHASE=device`); it rewrites the command
//!   line of crates compiled for the GPU.
//! - **embed** ([`embed`]): in the cargo phase, between the device and the
//!   host pass: each final binary's images become one object file.
//! - **rustc, host side** ([`rustc_host`]): cargo runs the wrapper for the
//!   workspace members of the host pass (`RUSTC_WORKSPACE_WRAPPER`,
//!   `__OFFLOAD_PHASE=host`); a final binary links its image object.
//! - **rustc, host dependencies** ([`rustc_dep`]): with the crate cache on,
//!   cargo-offload is the host pass's `RUSTC_WRAPPER` too; the crates
//!   outside the workspace are compiled unchanged or taken from the crate
//!   cache (`crate_cache.rs`).
//!
//! In both wrapper phases cargo's probes (`--print …`, `-vV`) pass through
//! untouched ([`crate::arg::Args::is_query`]), and a wrapper the user had
//! set (`RUSTC_WRAPPER`, e.g. sccache) is chained, not replaced
//! ([`rustc`]). What the cargo phase tells the wrapper phases is in
//! `handoff.rs`. Every phase ends in `errors::finish`: an error is printed
//! once and becomes the exit code.

pub mod cargo;
pub mod embed;
pub mod rustc;
pub mod rustc_dep;
pub mod rustc_device;
pub mod rustc_host;
