//! `cargo offload clean`: `cargo clean` (the target directory holds both
//! passes: the device pass's is `target/offload/…`), or with `--cache` the
//! cache that every project shares (`cache_gc`), as `cargo clean gc`
//! cleans cargo's global cache.

use clap::Args;

use crate::cmd::CommandSpec;
use crate::errors::{exit, CliError, Result};

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Clean offload's shared cache (device sysroots, the crate cache, tool probes under
    /// OFFLOAD_CACHE_DIR or ~/.cache/offload) instead of the target directory; what a running
    /// cargo offload uses is kept
    #[arg(long)]
    pub cache: bool,
    /// With --cache: remove least recently used entries until the cache is at most SIZE
    /// (e.g. 1G, 500M), instead of all of them
    #[arg(long, value_name = "SIZE", requires = "cache")]
    pub max_size: Option<String>,
    /// Print what would be removed instead of removing it
    #[arg(long)]
    pub dry_run: bool,
    /// Arguments for `cargo clean` (`--release`, `-p NAME`, `--target-dir DIR`, …)
    #[arg(value_name = "ARGS", trailing_var_arg = true, allow_hyphen_values = true, conflicts_with = "cache")]
    pub args: Vec<String>,
}

/// Runs `cargo offload clean`; the exit code.
///
/// # Errors
/// A `--max-size` that is not a size; `cargo` that cannot be started.
pub fn run(a: &CleanArgs) -> Result<i32> {
    if a.cache {
        return crate::cache_gc::clean(a.max_size.as_deref(), a.dry_run);
    }
    let mut args = vec!["clean".to_string()];
    if a.dry_run {
        args.push("--dry-run".into());
    }
    args.extend(a.args.iter().cloned());
    // The cargo that runs `cargo offload` (as `host::cargo_program`, which
    // `cli` would import in a cycle).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let spec = CommandSpec { program: cargo.into(), args, env: Vec::new() };
    let status = crate::child::status(&mut spec.command())?;
    if crate::interrupt::interrupting_status(&status) || crate::interrupt::interrupted() {
        return Err(CliError::Interrupted);
    }
    Ok(status.code().unwrap_or(exit::INTERNAL))
}

#[cfg(test)]
mod tests;
