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
mod tests {
    use crate::cli::{parse, Command};

    fn clean(line: &str) -> Result<super::CleanArgs, String> {
        match parse(line.split_whitespace()).map_err(|e| e.to_string())?.command {
            Command::Clean(a) => Ok(a),
            other => panic!("{line}: {other:?}"),
        }
    }

    /// `cargo clean`'s own flags pass through; `--max-size` needs
    /// `--cache`, which takes no `cargo clean` arguments.
    #[test]
    fn clean_command_lines() {
        let a = clean("cargo offload clean --release -p foo --target-dir t").unwrap();
        assert_eq!((a.cache, a.args.join(" ")), (false, "--release -p foo --target-dir t".to_string()));
        let a = clean("cargo offload clean --cache --max-size 1G --dry-run").unwrap();
        assert_eq!((a.cache, a.max_size.as_deref(), a.dry_run, a.args.len()), (true, Some("1G"), true, 0));
        let e = clean("cargo offload clean --max-size 1G").unwrap_err();
        assert!(e.contains("--cache"), "{e}");
        let e = clean("cargo offload clean --cache --release").unwrap_err();
        assert!(e.contains("cannot be used with") || e.contains("unexpected argument"), "{e}");
    }
}
