//! Command line: `cargo offload <build|run|test|bench|check|clippy|doc|clean|doctor>
//! [options] [-- args]`.
//!
//! Parsed like cargo-nextest: clap with `bin_name = "cargo"` and one
//! `offload` subcommand. Cargo's own flags are accepted with cargo's
//! spelling and forwarded to both passes (the device pass gets all but the
//! ones it sets itself: its target directory, message format and colors;
//! see [`CargoOpts::to_args`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

/// The architecture used when `--arch` is not given and no GPU is found:
/// `sm_80` PTX runs (JIT-compiled by the driver) on every NVIDIA GPU from the
/// A100 (sm_80) on, including the H100/H200 (sm_90).
pub const DEFAULT_NVPTX_ARCH: &str = "sm_80";

#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo", disable_version_flag = true)]
pub enum CargoCli {
    /// Build, run and test Rust crates whose kernels run on the GPU
    Offload(OffloadCli),
}

#[derive(Args, Debug)]
#[command(
    version,
    about = "Build, run and test Rust crates whose kernels run on the GPU",
    long_about = "Build, run and test Rust crates whose kernels run on the GPU.\n\n\
        Each command compiles the crate twice: a device pass for the GPU target, whose kernels are \
        linked into one device image per final binary (PTX, plus a cubin where ptxas is found), and \
        a host pass in which each binary embeds its image. Without a usable GPU the same binaries \
        run their kernels on the host CPU.",
    after_help = "Environment: OFFLOAD_RUSTC / OFFLOAD_CARGO (device compiler), OFFLOAD_PTXAS (empty: no cubin), \
        OFFLOAD_DEVICE_RUSTFLAGS (extra rustc flags for the device pass), OFFLOAD_LLVM_LINK / OFFLOAD_OPT / \
        OFFLOAD_LLC (LLVM tools), OFFLOAD_CACHE_DIR / OFFLOAD_CACHE_SIZE (shared cache and its size limit, \
        default 2G). At run time: OFFLOAD_DEVICE=cuda|host, OFFLOAD_LOG=1."
)]
pub struct OffloadCli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the device images and the host binaries that embed them
    Build(BuildArgs),
    /// Build, then run a binary (like `cargo run`)
    Run(RunArgs),
    /// Build, then run the tests (like `cargo test`); kernels in tests run on the GPU if there is one
    Test(TestArgs),
    /// Build, then run the benchmarks (like `cargo bench`)
    Bench(TestArgs),
    /// Check both passes for errors without generating code (like `cargo check`); with
    /// --message-format json the device pass's errors are JSON too, for rust-analyzer
    Check(CheckArgs),
    /// Lint the host pass with clippy and check the device pass for errors (like `cargo clippy`)
    Clippy(ClippyArgs),
    /// Document the crate as the host pass sees it (runs `cargo doc`)
    Doc(DocArgs),
    /// Remove the target directory (runs `cargo clean`), or with --cache offload's shared cache
    Clean(crate::clean::CleanArgs),
    /// List the toolchain parts, drivers and GPUs found, and how to install what is missing
    Doctor,
}

/// Options of the device pass.
#[derive(Args, Debug, Clone, Default)]
pub struct DeviceOpts {
    /// GPU architecture(s), comma-separated: sm_XY for NVIDIA, gfxNNN for AMD; one
    /// image each, all in the binary (default: the GPU nvidia-smi reports, else sm_80)
    #[arg(long, value_name = "ARCH[,ARCH…]", value_delimiter = ',')]
    pub arch: Vec<String>,

    /// Device target triple (default: from the architecture: nvptx64-nvidia-cuda for
    /// sm_*, amdgcn-amd-amdhsa for gfx*)
    #[arg(long = "target", value_name = "TRIPLE")]
    pub target: Option<String>,

    /// Compile device code with fast, less precise floating point, as nvcc's
    /// `-use_fast_math`: contract multiply-adds, flush f32 denormals to zero,
    /// approximate f32 division and square root, and `offload::math`'s
    /// approximate sin/cos. The host fallback keeps exact arithmetic.
    #[arg(long)]
    pub fast_math: bool,

    /// Contract `a * b + c` into fused multiply-adds in device code, as nvcc
    /// does by default (`--fmad=true`); Rust rounds each operation as written.
    /// Implied by --fast-math
    #[arg(long)]
    pub fmad: bool,

    /// Print the commands (with their environment) instead of running them
    #[arg(long)]
    pub dry_run: bool,

    /// Use verbose output (-vv: also the device link commands)
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,

    /// Do not print cargo-offload's status lines
    #[arg(short, long)]
    pub quiet: bool,
}

/// Cargo's options, forwarded.
#[derive(Args, Debug, Clone, Default)]
pub struct CargoOpts {
    /// Package(s) to build
    #[arg(short = 'p', long = "package", value_name = "SPEC", help_heading = "Package Selection")]
    pub package: Vec<String>,
    /// All packages in the workspace
    #[arg(long, visible_alias = "all", help_heading = "Package Selection")]
    pub workspace: bool,
    /// Exclude packages from the build
    #[arg(long, value_name = "SPEC", help_heading = "Package Selection")]
    pub exclude: Vec<String>,

    /// Only this package's library
    #[arg(long, help_heading = "Target Selection")]
    pub lib: bool,
    /// Only the specified binary
    #[arg(long, value_name = "NAME", help_heading = "Target Selection")]
    pub bin: Vec<String>,
    /// All binaries
    #[arg(long, help_heading = "Target Selection")]
    pub bins: bool,
    /// Only the specified example
    #[arg(long, value_name = "NAME", help_heading = "Target Selection")]
    pub example: Vec<String>,
    /// All examples
    #[arg(long, help_heading = "Target Selection")]
    pub examples: bool,
    /// Only the specified test target
    #[arg(long = "test", value_name = "NAME", help_heading = "Target Selection")]
    pub test: Vec<String>,
    /// All test targets
    #[arg(long, help_heading = "Target Selection")]
    pub tests: bool,
    /// Only the specified bench target
    #[arg(long, value_name = "NAME", help_heading = "Target Selection")]
    pub bench: Vec<String>,
    /// All bench targets
    #[arg(long, help_heading = "Target Selection")]
    pub benches: bool,
    /// All targets
    #[arg(long, help_heading = "Target Selection")]
    pub all_targets: bool,

    /// Space or comma separated list of features to activate
    #[arg(short = 'F', long, value_name = "FEATURES", help_heading = "Feature Selection")]
    pub features: Vec<String>,
    /// Activate all available features
    #[arg(long, help_heading = "Feature Selection")]
    pub all_features: bool,
    /// Do not activate the `default` feature
    #[arg(long, help_heading = "Feature Selection")]
    pub no_default_features: bool,

    /// Build artifacts in release mode, with optimizations
    #[arg(short = 'r', long, help_heading = "Compilation Options", conflicts_with = "profile")]
    pub release: bool,
    /// Build artifacts with the specified profile
    #[arg(long, value_name = "PROFILE-NAME", help_heading = "Compilation Options")]
    pub profile: Option<String>,
    /// Number of parallel jobs
    #[arg(short = 'j', long, value_name = "N", help_heading = "Compilation Options")]
    pub jobs: Option<String>,
    /// Directory for all generated artifacts
    #[arg(long, value_name = "DIRECTORY", help_heading = "Compilation Options")]
    pub target_dir: Option<PathBuf>,
    /// Error format: human, short, json, json-diagnostic-short, json-diagnostic-rendered-ansi,
    /// json-render-diagnostics (the device pass's diagnostics follow it too)
    #[arg(long, value_name = "FMT", value_parser = crate::output::parse_value, help_heading = "Compilation Options")]
    pub message_format: Vec<String>,
    /// Do not abort the build as soon as there is an error
    #[arg(long, help_heading = "Compilation Options")]
    pub keep_going: bool,
    /// Output a build timing report at the end of each pass's build
    #[arg(long, value_name = "FMTS", num_args = 0..=1, require_equals = true, default_missing_value = "",
          help_heading = "Compilation Options")]
    pub timings: Option<String>,
    /// Outputs a future incompatibility report at the end of the build
    #[arg(long)]
    pub future_incompat_report: bool,
    /// Coloring: auto, always, never
    #[arg(long, value_name = "WHEN", value_parser = ["auto", "always", "never"])]
    pub color: Option<String>,
    /// Override a configuration value (both passes)
    #[arg(long, value_name = "KEY=VALUE|PATH")]
    pub config: Vec<String>,
    /// Unstable (nightly-only) flags to Cargo (both passes)
    #[arg(short = 'Z', value_name = "FLAG")]
    pub unstable: Vec<String>,

    /// Path to Cargo.toml
    #[arg(long, value_name = "PATH", help_heading = "Manifest Options")]
    pub manifest_path: Option<PathBuf>,
    /// Assert that `Cargo.lock` will remain unchanged
    #[arg(long, help_heading = "Manifest Options")]
    pub locked: bool,
    /// Run without accessing the network
    #[arg(long, help_heading = "Manifest Options")]
    pub offline: bool,
    /// Equivalent to specifying both --locked and --offline
    #[arg(long, help_heading = "Manifest Options")]
    pub frozen: bool,
    /// Ignore `rust-version` specification in packages
    #[arg(long, help_heading = "Manifest Options")]
    pub ignore_rust_version: bool,
}

impl CargoOpts {
    /// The flags to forward to a pass (`device`: the device pass). Neither
    /// gets `--message-format` (the cargo phase chooses each pass's, see
    /// `output`); the device pass gets neither `--target-dir` (it has its
    /// own, below the host's) nor `--color` (its colors follow
    /// `status::color`, which `--color` sets).
    pub fn to_args(&self, device: bool) -> Vec<String> {
        let mut a = Vec::new();
        let mut many = |flag: &str, vals: &[String]| {
            for v in vals {
                a.push(flag.to_string());
                a.push(v.clone());
            }
        };
        many("--package", &self.package);
        many("--exclude", &self.exclude);
        many("--bin", &self.bin);
        many("--example", &self.example);
        many("--test", &self.test);
        many("--bench", &self.bench);
        many("--features", &self.features);
        many("--config", &self.config);
        many("-Z", &self.unstable);
        let flags = [
            (self.workspace, "--workspace"),
            (self.lib, "--lib"),
            (self.bins, "--bins"),
            (self.examples, "--examples"),
            (self.tests, "--tests"),
            (self.benches, "--benches"),
            (self.all_targets, "--all-targets"),
            (self.all_features, "--all-features"),
            (self.no_default_features, "--no-default-features"),
            (self.release, "--release"),
            (self.keep_going, "--keep-going"),
            (self.future_incompat_report, "--future-incompat-report"),
            (self.locked, "--locked"),
            (self.offline, "--offline"),
            (self.frozen, "--frozen"),
            (self.ignore_rust_version, "--ignore-rust-version"),
        ];
        for (on, f) in flags {
            if on {
                a.push(f.to_string());
            }
        }
        let host_only = |v: &Option<String>| v.clone().filter(|_| !device);
        let target_dir = self.target_dir.as_ref().map(|t| t.display().to_string());
        let manifest = self.manifest_path.as_ref().map(|m| m.display().to_string());
        for (flag, value) in [
            ("--profile", self.profile.clone()),
            ("--jobs", self.jobs.clone()),
            ("--manifest-path", manifest),
            ("--target-dir", host_only(&target_dir)),
            ("--color", host_only(&self.color)),
        ] {
            if let Some(v) = value {
                a.push(flag.into());
                a.push(v);
            }
        }
        match self.timings.as_deref() {
            Some("") => a.push("--timings".into()),
            Some(t) => a.push(format!("--timings={t}")),
            None => {}
        }
        a
    }

    /// The options `cargo metadata` takes too: `--locked`, `--offline`,
    /// `--frozen`, `--config`, `-Z`.
    pub fn metadata_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        for (on, flag) in [(self.locked, "--locked"), (self.offline, "--offline"), (self.frozen, "--frozen")] {
            if on {
                a.push(flag.to_string());
            }
        }
        for (flag, vals) in [("--config", &self.config), ("-Z", &self.unstable)] {
            for v in vals {
                a.extend([flag.to_string(), v.clone()]);
            }
        }
        a
    }
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub device: DeviceOpts,
    #[command(flatten)]
    pub cargo: CargoOpts,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub device: DeviceOpts,
    #[command(flatten)]
    pub cargo: CargoOpts,
    /// Arguments for the binary
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct TestArgs {
    #[command(flatten)]
    pub device: DeviceOpts,
    #[command(flatten)]
    pub cargo: CargoOpts,
    /// Compile, but don't run tests
    #[arg(long)]
    pub no_run: bool,
    /// Run only the tests whose names contain this string
    #[arg(value_name = "TESTNAME")]
    pub filter: Option<String>,
    /// Arguments for the test binaries
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub device: DeviceOpts,
    #[command(flatten)]
    pub cargo: CargoOpts,
}

#[derive(Args, Debug)]
pub struct ClippyArgs {
    #[command(flatten)]
    pub device: DeviceOpts,
    #[command(flatten)]
    pub cargo: CargoOpts,
    /// Arguments for clippy (`-W clippy::pedantic`, `-D warnings`, …); lint levels apply to the device pass too
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct DocArgs {
    #[command(flatten)]
    pub cargo: CargoOpts,
    /// Opens the docs in a browser after the operation
    #[arg(long)]
    pub open: bool,
    /// Don't build documentation for dependencies
    #[arg(long)]
    pub no_deps: bool,
    /// Document private items
    #[arg(long)]
    pub document_private_items: bool,
    /// Use verbose output (-vv very verbose)
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,
    /// Do not print cargo log messages
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the command instead of running it
    #[arg(long)]
    pub dry_run: bool,
}

impl DocArgs {
    /// `cargo doc`'s arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["doc".to_string()];
        a.extend(self.cargo.to_args(false));
        a.extend(self.cargo.message_format.iter().flat_map(|f| ["--message-format".to_string(), f.clone()]));
        for (on, flag) in [
            (self.open, "--open"),
            (self.no_deps, "--no-deps"),
            (self.document_private_items, "--document-private-items"),
            (self.quiet, "--quiet"),
        ] {
            if on {
                a.push(flag.into());
            }
        }
        a.extend((0..self.verbose).map(|_| "-v".to_string()));
        a
    }
}

/// Parses `cargo offload …` (argv[0] is the program, argv[1] is `offload`).
pub fn parse<I, T>(argv: I) -> Result<OffloadCli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = CargoCli::try_parse_from(argv).map(|CargoCli::Offload(o)| o)?;
    if let Some(cargo) = cli.command.cargo() {
        if let Err(e) = crate::output::check_kinds(&cargo.message_format) {
            use clap::CommandFactory;
            return Err(CargoCli::command().error(clap::error::ErrorKind::ArgumentConflict, e));
        }
    }
    Ok(cli)
}

impl Command {
    /// The cargo options of the commands that have them (all but `doctor`).
    pub fn cargo(&self) -> Option<&CargoOpts> {
        match self {
            Command::Build(a) => Some(&a.cargo),
            Command::Run(a) => Some(&a.cargo),
            Command::Test(a) | Command::Bench(a) => Some(&a.cargo),
            Command::Check(a) => Some(&a.cargo),
            Command::Clippy(a) => Some(&a.cargo),
            Command::Doc(a) => Some(&a.cargo),
            Command::Doctor | Command::Clean(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn ok(line: &str) -> OffloadCli {
        parse(line.split_whitespace()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn err(line: &str) -> String {
        parse(line.split_whitespace()).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn valid_command_lines() {
        let table: &[(&str, &[&str])] = &[
            ("cargo offload build", &[]),
            ("cargo offload build --release --bin a", &["--bin", "a", "--release"]),
            (
                "cargo offload build -p x --features f1,f2 --no-default-features",
                &["--package", "x", "--features", "f1,f2", "--no-default-features"],
            ),
            ("cargo offload build --profile bench -j 2", &["--profile", "bench", "--jobs", "2"]),
            (
                "cargo offload build --example e --manifest-path m/Cargo.toml",
                &["--example", "e", "--manifest-path", "m/Cargo.toml"],
            ),
        ];
        for (line, device_args) in table {
            let Command::Build(b) = ok(line).command else { panic!("{line}") };
            assert_eq!(b.cargo.to_args(true), *device_args, "{line}");
        }
        let Command::Run(r) = ok("cargo offload run --arch sm_90 -v -- --size 10").command else { panic!() };
        assert_eq!(r.device.arch, ["sm_90"]);
        assert_eq!(r.device.verbose, 1);
        assert_eq!(r.args, ["--size", "10"]);
        let Command::Test(t) = ok("cargo offload test --test integ some_name -- --nocapture").command else { panic!() };
        assert_eq!(t.cargo.test, ["integ"]);
        assert_eq!(t.filter.as_deref(), Some("some_name"));
        assert_eq!(t.args, ["--nocapture"]);
        let Command::Build(b) = ok("cargo offload build --target-dir t --message-format json").command else {
            panic!()
        };
        assert!(b.cargo.to_args(true).is_empty(), "device pass keeps its own target dir and JSON");
        assert_eq!(b.cargo.to_args(false), ["--target-dir", "t"], "the cargo phase chooses each pass's format");
        assert_eq!(b.cargo.message_format, ["json"]);
        assert!(matches!(ok("cargo offload doctor").command, Command::Doctor));
        let Command::Build(b) = ok("cargo offload build --target amdgcn-amd-amdhsa --arch gfx90a --dry-run").command
        else {
            panic!()
        };
        assert_eq!(b.device.target.as_deref(), Some("amdgcn-amd-amdhsa"));
        assert!(b.device.dry_run);
        let Command::Build(b) = ok("cargo offload build --arch sm_80,sm_90 --arch gfx90a").command else { panic!() };
        assert_eq!(b.device.arch, ["sm_80", "sm_90", "gfx90a"]);
        let Command::Bench(t) = ok("cargo offload bench --bench speed -- --quick").command else { panic!() };
        assert_eq!(t.cargo.bench, ["speed"]);
        assert_eq!(t.args, ["--quick"]);
    }

    /// cargo's other common flags: (command line, device pass's flags, host
    /// pass's flags).
    #[test]
    fn cargo_flags_are_forwarded() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let table: &[(&str, &[&str], &[&str])] = &[
            ("--keep-going", &["--keep-going"], &["--keep-going"]),
            ("--timings", &["--timings"], &["--timings"]),
            ("--timings=html,json", &["--timings=html,json"], &["--timings=html,json"]),
            ("--future-incompat-report", &["--future-incompat-report"], &["--future-incompat-report"]),
            (
                "--config net.retry=2 --config a.toml",
                &["--config", "net.retry=2", "--config", "a.toml"],
                &["--config", "net.retry=2", "--config", "a.toml"],
            ),
            (
                "-Z unstable-options -Zbindeps",
                &["-Z", "unstable-options", "-Z", "bindeps"],
                &["-Z", "unstable-options", "-Z", "bindeps"],
            ),
            ("--color never", &[], &["--color", "never"]),
            (
                "--ignore-rust-version --locked --offline --frozen",
                &["--locked", "--offline", "--frozen", "--ignore-rust-version"],
                &["--locked", "--offline", "--frozen", "--ignore-rust-version"],
            ),
            ("--all", &["--workspace"], &["--workspace"]),
            ("-j 3", &["--jobs", "3"], &["--jobs", "3"]),
        ];
        for (flags, device, host) in table {
            for sub in ["build", "check", "clippy", "run", "test"] {
                let line = format!("cargo offload {sub} {flags}");
                let cargo = match ok(&line).command {
                    Command::Build(b) => b.cargo,
                    Command::Check(c) => c.cargo,
                    Command::Clippy(c) => c.cargo,
                    Command::Run(r) => r.cargo,
                    Command::Test(t) => t.cargo,
                    other => panic!("{line}: {other:?}"),
                };
                assert_eq!((cargo.to_args(true), cargo.to_args(false)), (v(device), v(host)), "{line}");
            }
        }
        let Command::Build(b) = ok("cargo offload build --config x=1 -Zfoo --locked").command else { panic!() };
        assert_eq!(b.cargo.metadata_args(), ["--locked", "--config", "x=1", "-Z", "foo"]);
        let Command::Clippy(c) = ok("cargo offload clippy --all-targets -- -D warnings").command else { panic!() };
        assert_eq!((c.cargo.all_targets, c.args.as_slice()), (true, &["-D".to_string(), "warnings".into()][..]));
        let Command::Doc(d) = ok("cargo offload doc --no-deps --open -p x --message-format short -v").command else {
            panic!()
        };
        assert_eq!(d.to_args(), ["doc", "--package", "x", "--message-format", "short", "--open", "--no-deps", "-v"]);
    }

    /// The rust-analyzer setting both READMEs give is a valid command line
    /// that checks all targets, as rust-analyzer's own check does, with
    /// JSON diagnostics.
    #[test]
    fn rust_analyzer_setting_in_the_readmes() {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        for readme in [crate_dir.join("../../README.md"), crate_dir.join("README.md")] {
            let text = std::fs::read_to_string(&readme).unwrap();
            let key = "\"rust-analyzer.check.overrideCommand\": ";
            let at = text.find(key).unwrap_or_else(|| panic!("{}: no setting", readme.display())) + key.len();
            let array = &text[at..at + text[at..].find(']').unwrap() + 1];
            let argv: Vec<String> = serde_json::from_str(array).unwrap();
            let Command::Check(c) = parse(&argv).unwrap_or_else(|e| panic!("{array}: {e}")).command else {
                panic!("{array}")
            };
            assert!(c.cargo.all_targets, "{}: {array}", readme.display());
            assert_eq!(c.cargo.message_format, ["json"], "{}: {array}", readme.display());
            assert!(text.contains("builds the device sysroot"), "{}", readme.display());
        }
    }

    #[test]
    fn invalid_command_lines() {
        assert!(err("cargo offload").contains("Usage"));
        assert!(err("cargo offload fly").contains("unrecognized subcommand"));
        assert!(err("cargo offload build --arch").contains("a value is required"));
        assert!(err("cargo offload build --bogus").contains("unexpected argument '--bogus'"));
        assert!(err("cargo build").contains("unrecognized subcommand"));
        assert!(err("cargo offload doctor --arch sm_90").contains("unexpected argument"));
        assert!(err("cargo offload build --release --profile dev").contains("cannot be used with"));
        assert!(err("cargo offload check --message-format jsn").contains("`jsn` is not a message format"));
        let two = "error: cannot specify two kinds of `message-format` arguments";
        assert!(err("cargo offload check --message-format=json,short").starts_with(two));
        assert!(err("cargo offload doc --message-format short --message-format json").starts_with(two));
        assert!(err("cargo offload build --color sometimes").contains("invalid value 'sometimes'"));
        assert!(err("cargo offload doc --arch sm_90").contains("unexpected argument '--arch'"));
    }
}
