//! The command lines `cargo offload` would run, checked without running
//! them (clang's `clang/test/Driver/linker-wrapper.c` is the model): each
//! test runs the real `cargo offload … --dry-run` on a fixture and asserts
//! on the device and host passes it prints, parsed into their environment,
//! rustflags and arguments. Nothing is built.
//!
//! The assertions are about structure (which pass gets which flag, which
//! variable is set or cleared, which directory each pass uses), not about
//! the whole text, so that a change of how `core` reaches the device pass
//! (`-Zbuild-std` or a prebuilt sysroot) does not break them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One pass as `--dry-run` prints it.
#[derive(Debug, Default)]
struct Pass {
    /// `# device pass (<triple> <arch>)`: the triple and arch.
    title: String,
    /// `KEY=value` (Some) and `unset KEY` (None).
    env: BTreeMap<String, Option<String>>,
    /// The program and its arguments.
    argv: Vec<String>,
}

impl Pass {
    fn set(&self, key: &str) -> &str {
        match self.env.get(key) {
            Some(Some(v)) => v,
            other => panic!("{key} is not set in {}: {other:?}", self.title),
        }
    }

    fn unset(&self, key: &str) -> bool {
        matches!(self.env.get(key), Some(None))
    }

    /// `CARGO_ENCODED_RUSTFLAGS`, split.
    fn rustflags(&self) -> Vec<String> {
        self.set("CARGO_ENCODED_RUSTFLAGS").trim_matches('\'').split("\\x1f").map(String::from).collect()
    }

    /// The value after `flag` in the arguments.
    fn arg(&self, flag: &str) -> Option<&str> {
        self.argv.iter().position(|a| a == flag).and_then(|i| self.argv.get(i + 1)).map(String::as_str)
    }

    fn has(&self, arg: &str) -> bool {
        self.argv.iter().any(|a| a == arg)
    }

    /// `cargo <subcommand>`: the first argument.
    fn subcommand(&self) -> &str {
        &self.argv[1]
    }
}

/// What `--dry-run` printed.
struct DryRun {
    devices: Vec<Pass>,
    embed: String,
    host: Pass,
    stderr: String,
}

fn parse(stdout: &str) -> (Vec<Pass>, String, Pass) {
    let mut passes: Vec<Pass> = Vec::new();
    let mut embed = String::new();
    for line in stdout.lines() {
        if let Some(t) = line.strip_prefix("# device pass (") {
            passes.push(Pass { title: t.trim_end_matches(')').into(), ..Pass::default() });
        } else if line == "# host pass" {
            passes.push(Pass { title: "host".into(), ..Pass::default() });
        } else if let Some(e) = line.strip_prefix("# embed: ") {
            embed = e.into();
        } else {
            let l = line.trim_start();
            let l = l.split("    # ").next().unwrap_or(l);
            let pass = passes.last_mut().unwrap_or_else(|| panic!("a line before any pass: {line}"));
            if let Some(k) = l.strip_prefix("unset ") {
                pass.env.insert(k.into(), None);
            } else if let Some((k, v)) =
                l.split_once('=').filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            {
                pass.env.insert(k.into(), Some(v.into()));
            } else {
                pass.argv = l.split(' ').map(String::from).collect();
            }
        }
    }
    // The host pass is last, but for `check` and `clippy`, where it is first.
    let at = passes.iter().position(|p| p.title == "host").expect("a host pass");
    let host = passes.remove(at);
    (passes, embed, host)
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Runs `cmd`: exit code, stdout, stderr.
fn output(mut cmd: Command) -> (i32, String, String) {
    let out = cmd.output().expect("run cargo-offload");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// A copy of `tests/fixtures/bin-only` with a target directory that must
/// stay empty.
struct Fixture {
    dir: PathBuf,
    target: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("dry-run-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("bin-only");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let from = repo.join("tests/fixtures/bin-only");
        std::fs::copy(from.join("src/main.rs"), dir.join("src/main.rs")).unwrap();
        let manifest = std::fs::read_to_string(from.join("Cargo.toml")).unwrap();
        let manifest = manifest.replace("@OFFLOAD@", repo.join("crates/offload").to_str().unwrap());
        std::fs::write(dir.join("Cargo.toml"), manifest + "\n[workspace]\n").unwrap();
        Fixture { dir, target: base.join("target") }
    }

    /// `cargo offload <args> --target-dir <target> --dry-run`, which must succeed.
    fn dry_run(&self, args: &[&str], env: &[(&str, &str)]) -> DryRun {
        let out = self.command(args, env).output().expect("run cargo-offload");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {}\n{stdout}\n{stderr}", out.status);
        let (devices, embed, host) = parse(&stdout);
        DryRun { devices, embed, host, stderr }
    }

    /// The command of [`Fixture::dry_run`], to run as a test needs.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut a = args.to_vec();
        a.insert(a.iter().position(|x| *x == "--").unwrap_or(a.len()), "--dry-run");
        self.in_target(&a, env)
    }

    /// `cargo offload <args> --target-dir <target>`: exit code, stdout, stderr.
    fn offload(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        output(self.in_target(args, env))
    }

    /// `cargo offload <args> --target-dir <target>`, `--target-dir` before
    /// any `--`.
    fn in_target(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let (args, trailing) = match args.iter().position(|a| *a == "--") {
            Some(i) => (&args[..i], &args[i..]),
            None => (args, &[][..]),
        };
        let target = self.target.to_str().unwrap();
        let all: Vec<&str> =
            args.iter().copied().chain(["--target-dir", target]).chain(trailing.iter().copied()).collect();
        // No cubins: finding `ptxas` asks Python for its site directories
        // (where pip puts the CUDA wheel), a third of a dry run's time with
        // pyenv's shims, and nothing here assembles. `doctor` still looks.
        let env: Vec<(&str, &str)> = [("OFFLOAD_PTXAS", "")].into_iter().chain(env.iter().copied()).collect();
        self.cargo_offload_command(&all, &env)
    }

    /// `cargo offload <args>` in the fixture: exit code, stdout, stderr.
    fn cargo_offload(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        output(self.cargo_offload_command(args, env))
    }

    fn cargo_offload_command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-offload"));
        cmd.arg("offload").args(args);
        cmd.current_dir(&self.dir).env("CARGO_TERM_COLOR", "never");
        for k in [
            "__OFFLOAD_PHASE",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "OFFLOAD_ARCH",
            "OFFLOAD_DEVICE_RUSTFLAGS",
            "OFFLOAD_BUILD_STD",
        ] {
            cmd.env_remove(k);
        }
        cmd.envs(env.iter().copied());
        cmd
    }

    /// A `rustup` that never answers, first on `PATH`: the `PATH` to use.
    /// Once started it creates [`Fixture::rustup_started`].
    fn hanging_rustup(&self) -> String {
        let bin = self.dir.join("fake-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let rustup = bin.join("rustup");
        std::fs::write(&rustup, format!("#!/bin/sh\n: > '{}'\nexec sleep 20\n", self.rustup_started().display()))
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rustup, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
    }

    /// The file the [`Fixture::hanging_rustup`] creates when it starts.
    fn rustup_started(&self) -> PathBuf {
        self.dir.join("rustup-started")
    }

    /// Rewrites the fixture's `Cargo.toml` with `f`.
    fn edit_manifest(&self, f: impl FnOnce(String) -> String) {
        let p = self.dir.join("Cargo.toml");
        std::fs::write(&p, f(std::fs::read_to_string(&p).unwrap())).unwrap();
    }

    /// Whether the dry run left the target directory as it was (absent),
    /// but for the AMD GPU target specification it writes.
    fn built_nothing(&self) -> bool {
        match std::fs::read_dir(self.target.join("offload")) {
            Err(_) => !self.target.exists(),
            Ok(rd) => rd.flatten().all(|e| e.file_name() == "amdgcn-amd-amdhsa.json"),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.dir.parent().unwrap());
    }
}

fn exe() -> String {
    Path::new(env!("CARGO_BIN_EXE_cargo-offload")).display().to_string()
}

/// The device pass is a hermetic inner cargo: its own compiler, wrapper,
/// flags and target directory, with every inherited host setting cleared;
/// the host pass is the user's cargo with the workspace wrapper.
#[test]
fn device_and_host_passes_for_one_architecture() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("RUSTFLAGS", "-Ctarget-cpu=native")]);
    assert_eq!(d.devices.len(), 1);
    let dev = &d.devices[0];
    assert_eq!(dev.title, "nvptx64-nvidia-cuda sm_90");
    assert_eq!(dev.subcommand(), "build");
    assert_eq!(dev.arg("--target"), Some("nvptx64-nvidia-cuda"));
    let device_dir = f.target.join("offload/nvptx64-nvidia-cuda-sm_90");
    assert_eq!(dev.arg("--target-dir"), Some(device_dir.to_str().unwrap()));
    assert_eq!(dev.arg("--message-format"), Some("json"), "artifacts come from cargo's JSON messages");
    for cleared in ["RUSTFLAGS", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR"] {
        assert!(dev.unset(cleared), "{cleared}: {:?}", dev.env);
    }
    assert_eq!(dev.set("RUSTC_WRAPPER"), exe());
    assert_eq!(dev.set("__OFFLOAD_PHASE"), "device");
    assert_eq!(dev.set("RUSTC_BOOTSTRAP"), "1");
    assert!(Path::new(dev.set("RUSTC")).is_file());
    assert!(dev.set("OFFLOAD_LINK_CACHE").starts_with(device_dir.to_str().unwrap()));
    assert!(!dev.env.contains_key("OFFLOAD_LINK_LOG"), "-vv only");
    let flags = dev.rustflags();
    for f in ["-Ctarget-cpu=sm_90", "-Ctarget-feature=+ptx78", "offload_device"] {
        assert!(flags.iter().any(|x| x == f), "{f}: {flags:?}");
    }
    let linker = flags.iter().find_map(|x| x.strip_prefix("-Clinker=")).expect("-Clinker");
    assert!(linker.ends_with("offload-linker") && Path::new(linker).is_file(), "{linker}");
    assert!(!flags.iter().any(|x| x.contains("native")), "host RUSTFLAGS stay out: {flags:?}");
    assert!(!flags.iter().any(|x| x.contains("fast_math") && !x.starts_with("cfg(")), "{flags:?}");

    let host = &d.host;
    assert_eq!(host.subcommand(), "build");
    assert_eq!(host.arg("--target-dir"), Some(f.target.to_str().unwrap()));
    assert_eq!(host.arg("--target"), None, "the host pass builds for the host");
    assert_eq!(host.set("RUSTC_WORKSPACE_WRAPPER"), exe());
    assert_eq!(host.set("__OFFLOAD_PHASE"), "host");
    assert!(host
        .set("__OFFLOAD_IMAGE_MAP")
        .starts_with(f.target.join("offload/images/image-map-dev-sm_90-").to_str().unwrap()));
    assert_eq!(host.set("__OFFLOAD_GENERIC_DIR"), dev.set("__OFFLOAD_GENERIC_DIR"));
    assert!(!host.env.contains_key("CARGO_ENCODED_RUSTFLAGS") && !host.env.contains_key("RUSTFLAGS"), "{:?}", host.env);
    // Dependencies outside the workspace go through the wrapper too, for
    // the crate cache (the device pass's directory, keyed by this target).
    assert_eq!(host.set("RUSTC_WRAPPER"), exe());
    assert_eq!(host.set("__OFFLOAD_CRATE_CACHE"), dev.set("__OFFLOAD_CRATE_CACHE"));
    assert_eq!(host.set("__OFFLOAD_CRATE_CACHE_TARGET_DIR"), f.target.to_str().unwrap());
    let off = f.dry_run(&["build", "--arch", "sm_90"], &[("OFFLOAD_CRATE_CACHE", "0")]).host;
    assert!(!off.env.contains_key("RUSTC_WRAPPER") && !off.env.contains_key("__OFFLOAD_CRATE_CACHE"), "{:?}", off.env);
    assert!(d.embed.starts_with("each final binary's images (PTX sm_90"), "{}", d.embed);
    assert!(f.built_nothing());
}

/// `--arch a,b`: one device pass (and target directory) per architecture,
/// each with its own target CPU and PTX ISA version; one host pass; one
/// bundle with both images.
#[test]
fn an_architecture_list_is_one_device_pass_each() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_80,sm_90", "--arch", "sm_80"], &[]);
    let titles: Vec<&str> = d.devices.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["nvptx64-nvidia-cuda sm_80", "nvptx64-nvidia-cuda sm_90"], "a repeated arch is built once");
    assert!(
        d.stderr.contains("warning: `sm_80` is named more than once (from --arch); its image is built once"),
        "{}",
        d.stderr
    );
    for (pass, (arch, ptx)) in d.devices.iter().zip([("sm_80", "+ptx70"), ("sm_90", "+ptx78")]) {
        let flags = pass.rustflags();
        assert!(flags.contains(&format!("-Ctarget-cpu={arch}")), "{flags:?}");
        assert!(flags.contains(&format!("-Ctarget-feature={ptx}")), "{flags:?}");
        assert!(pass.arg("--target-dir").unwrap().ends_with(&format!("offload/nvptx64-nvidia-cuda-{arch}")));
    }
    assert_ne!(d.devices[0].set("OFFLOAD_LINK_CACHE"), d.devices[1].set("OFFLOAD_LINK_CACHE"));
    assert!(d.embed.contains("PTX sm_80") && d.embed.contains("PTX sm_90"), "{}", d.embed);
    assert!(d.host.set("__OFFLOAD_IMAGE_MAP").contains("image-map-dev-sm_80+sm_90-"));
    assert!(f.built_nothing());
}

/// Cargo's own options reach both passes, except the ones each pass sets
/// itself (the device pass's target directory and message format).
#[test]
fn cargo_options_reach_both_passes() {
    let f = Fixture::new();
    let d = f.dry_run(
        &[
            "build",
            "--arch",
            "sm_90",
            "--release",
            "-p",
            "fixture_bin_only",
            "--features",
            "a,b",
            "--no-default-features",
            "--all-features",
            "--message-format",
            "short",
        ],
        &[],
    );
    let (dev, host) = (&d.devices[0], &d.host);
    for arg in ["--release", "--no-default-features", "--all-features"] {
        assert!(dev.has(arg) && host.has(arg), "{arg}\n{:?}\n{:?}", dev.argv, host.argv);
    }
    for (flag, value) in [("--package", "fixture_bin_only"), ("--features", "a,b")] {
        assert_eq!((dev.arg(flag), host.arg(flag)), (Some(value), Some(value)), "{flag}");
    }
    assert_eq!(host.arg("--message-format"), Some("short"));
    assert_eq!(dev.arg("--message-format"), Some("json,json-diagnostic-short"), "read, shown short");
    assert!(host.set("__OFFLOAD_IMAGE_MAP").contains("image-map-release-sm_90-"));
    let d = f.dry_run(&["build", "--arch", "sm_90", "--profile", "bench"], &[]);
    assert_eq!((d.devices[0].arg("--profile"), d.host.arg("--profile")), (Some("bench"), Some("bench")));
    // cargo's other common flags (`-Z` too: `cli.rs`'s unit test; the
    // host cargo here is stable, and `cargo metadata` would refuse it).
    let d = f.dry_run(
        &[
            "build",
            "--arch",
            "sm_90",
            "--keep-going",
            "--timings",
            "--config",
            "net.retry=3",
            "--future-incompat-report",
            "--ignore-rust-version",
            "--color",
            "never",
        ],
        &[],
    );
    let (dev, host) = (&d.devices[0], &d.host);
    for arg in ["--keep-going", "--timings", "--future-incompat-report", "--ignore-rust-version"] {
        assert!(dev.has(arg) && host.has(arg), "{arg}\n{:?}\n{:?}", dev.argv, host.argv);
    }
    assert_eq!((dev.arg("--config"), host.arg("--config")), (Some("net.retry=3"), Some("net.retry=3")));
    assert_eq!((dev.arg("--color"), host.arg("--color")), (None, Some("never")), "the device pass's colors are ours");
    assert!(f.built_nothing());
}

/// `--fast-math` and `--fmad`: a cfg for the crates and a flag for the
/// device linker, and a target directory of their own.
#[test]
fn floating_point_modes() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_90", "--fast-math"], &[]);
    let dev = &d.devices[0];
    let flags = dev.rustflags().join(" ");
    assert!(flags.contains("--cfg offload_fast_math") && flags.contains("-Clink-arg=--fast-math"), "{flags}");
    assert!(!flags.contains("--fmad"), "{flags}");
    assert!(dev.arg("--target-dir").unwrap().ends_with("nvptx64-nvidia-cuda-sm_90-fast-math"));
    assert!(d.host.set("__OFFLOAD_IMAGE_MAP").contains("image-map-dev-sm_90-fast-math-"));
    let d = f.dry_run(&["build", "--arch", "sm_90", "--fmad"], &[]);
    let dev = &d.devices[0];
    let flags = dev.rustflags().join(" ");
    assert!(flags.contains("-Clink-arg=--fmad"), "{flags}");
    assert!(!flags.contains("--cfg offload_fast_math") && !flags.contains("--fast-math"), "{flags}");
    assert!(dev.arg("--target-dir").unwrap().ends_with("nvptx64-nvidia-cuda-sm_90-fmad"));
    assert!(f.built_nothing());
}

/// `OFFLOAD_DEVICE_RUSTFLAGS` goes to the device pass only, after the
/// flags `cargo offload` sets (so the user's win); a PTX ISA version it
/// chooses replaces the one the architecture implies.
#[test]
fn device_rustflags_reach_the_device_pass_only() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("OFFLOAD_DEVICE_RUSTFLAGS", "-Copt-level=1 --cfg my_device")]);
    let flags = d.devices[0].rustflags();
    let at = |f: &str| flags.iter().position(|x| x == f).unwrap_or_else(|| panic!("{f}: {flags:?}"));
    assert!(at("-Copt-level=1") > at("-Ctarget-cpu=sm_90"));
    assert_eq!(flags[at("--cfg")..].iter().filter(|x| *x == "my_device").count(), 1);
    assert!(flags.ends_with(&["--cfg".to_string(), "my_device".to_string()]), "{flags:?}");
    assert!(!d.host.env.values().flatten().any(|v| v.contains("my_device")), "{:?}", d.host.env);
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("OFFLOAD_DEVICE_RUSTFLAGS", "-Ctarget-feature=+ptx80")]);
    let flags = d.devices[0].rustflags();
    assert!(
        flags.contains(&"-Ctarget-feature=+ptx80".into()) && !flags.contains(&"-Ctarget-feature=+ptx78".into()),
        "{flags:?}"
    );
}

/// `run`, `test` and `bench`: the device pass builds (`test --no-run` for
/// test targets), the host pass runs, with the program's arguments.
#[test]
fn commands_and_their_arguments() {
    let f = Fixture::new();
    let d = f.dry_run(&["run", "--arch", "sm_90", "--", "--size", "10"], &[]);
    assert_eq!(d.devices[0].subcommand(), "build");
    assert!(!d.devices[0].has("--size"));
    assert_eq!(d.host.subcommand(), "run");
    assert!(d.host.argv.ends_with(&["--".into(), "--size".into(), "10".into()]), "{:?}", d.host.argv);
    let d = f.dry_run(&["test", "--arch", "sm_90", "some_name", "--", "--nocapture"], &[]);
    assert_eq!(d.devices[0].argv[1..3], ["test", "--no-run"]);
    assert!(!d.devices[0].has("some_name"));
    assert_eq!(d.host.argv[1..3], ["test", "some_name"]);
    assert!(d.host.argv.ends_with(&["--".into(), "--nocapture".into()]));
    let d = f.dry_run(&["bench", "--arch", "sm_90", "--no-run"], &[]);
    assert_eq!(d.devices[0].argv[1..3], ["bench", "--no-run"]);
    assert_eq!(d.host.argv[1..3], ["bench", "--no-run"]);
    assert!(f.built_nothing());
}

/// `check` and `clippy`: the host pass first, its messages relayed (read
/// as JSON, shown as the user's `--message-format` asks), then the device
/// pass as `cargo check`: no code generation, nothing embedded. `doc` is
/// the host's `cargo doc`.
#[test]
fn check_clippy_and_doc() {
    let f = Fixture::new();
    let args = ["check", "--arch", "sm_90", "--message-format", "json", "--all-targets", "--dry-run"];
    let (code, stdout, stderr) = f.offload(&args, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("# host pass\n"), "the host pass first: {stdout}");
    let (devices, embed, host) = parse(&stdout);
    let dev = &devices[0];
    assert_eq!((host.subcommand(), dev.subcommand()), ("check", "check"));
    assert_eq!((host.arg("--message-format"), dev.arg("--message-format")), (Some("json"), Some("json")));
    assert!(host.has("--all-targets") && dev.has("--all-targets"));
    assert_eq!(host.set("RUSTC_WORKSPACE_WRAPPER"), exe(), "the wrapper declares `cfg(offload_device)`");
    assert_eq!(dev.set("RUSTC_WRAPPER"), exe());
    assert!(dev.set("__OFFLOAD_HOST_ONLY_DIR").ends_with("offload/nvptx64-nvidia-cuda-sm_90/host-only"));
    assert!(embed.is_empty(), "nothing is embedded: {embed}");
    // Human and short output are read as JSON too, and shown as text (the
    // other formats: `output.rs`'s unit test).
    let d = f.dry_run(&["check", "--arch", "sm_90", "--message-format", "short"], &[]);
    let short = Some("json,json-diagnostic-short");
    assert_eq!((d.host.arg("--message-format"), d.devices[0].arg("--message-format")), (short, short));
    let d = f.dry_run(&["clippy", "--arch", "sm_90", "--", "-D", "warnings"], &[]);
    assert_eq!((d.host.subcommand(), d.devices[0].subcommand()), ("clippy", "check"));
    let tail = ["--", "--check-cfg", "cfg(offload_device)", "-D", "warnings"].map(String::from);
    assert!(d.host.argv.ends_with(&tail), "{:?}", d.host.argv);
    assert!(!d.host.env.contains_key("RUSTC_WORKSPACE_WRAPPER"), "cargo clippy sets its own: {:?}", d.host.env);
    assert!(!d.devices[0].has("warnings"), "{:?}", d.devices[0].argv);
    // The lint levels reach the device pass's rustc (its rustflags), so
    // that `-D warnings` fails on a warning of device-only code too; the
    // other arguments are clippy's alone.
    let d = f.dry_run(&["clippy", "--arch", "sm_90", "--", "-D", "warnings", "-Wclippy::pedantic", "--no-deps"], &[]);
    let flags = d.devices[0].rustflags();
    assert!(flags.windows(2).any(|w| w == ["-D", "warnings"]), "{flags:?}");
    assert!(flags.iter().any(|f| f == "-Wclippy::pedantic") && !flags.iter().any(|f| f == "--no-deps"), "{flags:?}");
    let d = f.dry_run(&["check", "--arch", "sm_90"], &[]);
    assert!(!d.devices[0].rustflags().iter().any(|f| f == "-D"), "check has no lint levels");
    // The lint levels of the host's RUSTFLAGS too, in every command, and
    // nothing else of them.
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("RUSTFLAGS", "-D warnings --cfg host_only -Wunused")]);
    let flags = d.devices[0].rustflags();
    assert!(flags.windows(2).any(|w| w == ["-D", "warnings"]) && flags.iter().any(|f| f == "-Wunused"), "{flags:?}");
    assert!(!flags.iter().any(|f| f == "host_only"), "{flags:?}");
    let (code, stdout, stderr) = f.offload(&["doc", "--no-deps", "-p", "fixture_bin_only", "--dry-run"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let (devices, _, host) = parse(&stdout);
    assert!(devices.is_empty() && host.env.is_empty(), "{stdout}");
    assert_eq!(host.subcommand(), "doc");
    assert!(host.has("--no-deps") && host.arg("--package") == Some("fixture_bin_only"), "{:?}", host.argv);
    // rustdoc is told about `cfg(offload_device)`, besides the user's own
    // rustdoc flags (the config's, or the environment's, kept).
    assert_eq!(host.arg("--config"), Some(r#"build.rustdocflags=["--check-cfg","cfg(offload_device)"]"#));
    let (_, stdout, _) = f.offload(&["doc", "--dry-run"], &[("RUSTDOCFLAGS", "-D warnings")]);
    let (_, _, host) = parse(&stdout);
    assert_eq!(host.set("RUSTDOCFLAGS"), "-D warnings --check-cfg cfg(offload_device)");
    assert!(!host.has("--config"), "{:?}", host.argv);
    assert!(f.built_nothing());
}

/// A `[package.metadata]` table one or two edits from `offload` is named,
/// with the right name: it is not read.
#[test]
fn a_misspelled_offload_table_is_named() {
    let f = Fixture::new();
    f.edit_manifest(|s| s + "\n[package.metadata.ofload]\narch = \"sm_90\"\n");
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[]);
    let warning = "warning: `[package.metadata.ofload]` in Cargo.toml is not read by cargo offload; did you mean \
                   `[package.metadata.offload]`?";
    assert_eq!(d.stderr.matches(warning).count(), 1, "{}", d.stderr);
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[]);
    assert!(!d.stderr.contains("warning"), "{}", d.stderr);
}

/// Verbosity: `-v` reaches the host cargo; `-vv` makes offload-linker log
/// its commands; `-q` quiets both passes. A user's rustc wrappers are
/// chained, not replaced.
#[test]
fn verbosity_and_user_wrappers() {
    let f = Fixture::new();
    // Wrappers that run what they wrap (`cargo metadata` runs rustc through them).
    let wrap = f.dir.join("wrap.sh");
    std::fs::write(&wrap, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&wrap, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let wrap = wrap.to_str().unwrap();
    let d =
        f.dry_run(&["build", "--arch", "sm_90", "-vv"], &[("RUSTC_WRAPPER", wrap), ("RUSTC_WORKSPACE_WRAPPER", wrap)]);
    assert!(d.host.has("-v"));
    assert!(d.devices[0].set("OFFLOAD_LINK_LOG").ends_with("link-commands.log"));
    assert_eq!(d.devices[0].set("__OFFLOAD_INNER_WRAPPER"), wrap);
    assert_eq!(d.devices[0].set("RUSTC_WRAPPER"), exe());
    assert_eq!(d.host.set("__OFFLOAD_INNER_WRAPPER"), wrap);
    assert_eq!(d.host.set("RUSTC_WORKSPACE_WRAPPER"), exe());
    // The user's RUSTC_WRAPPER (sccache, say) keeps the host pass's
    // dependencies; the crate cache stays out of its way.
    assert!(!d.host.env.contains_key("RUSTC_WRAPPER") && !d.host.env.contains_key("__OFFLOAD_CRATE_CACHE"));
    assert!(d.stderr.contains("Toolchain "), "-v names the toolchain: {}", d.stderr);
    let d = f.dry_run(&["build", "--arch", "sm_90", "-q"], &[]);
    assert!(d.devices[0].has("--quiet") && d.host.has("--quiet"));
    assert!(!d.host.has("-v") && !d.devices[0].env.contains_key("__OFFLOAD_INNER_WRAPPER"));
}

/// Without `--arch`, `OFFLOAD_ARCH` chooses, and a status line says so.
#[test]
fn offload_arch_chooses_without_arch() {
    let f = Fixture::new();
    let d = f.dry_run(&["build"], &[("OFFLOAD_ARCH", "sm_80, sm_90")]);
    let titles: Vec<&str> = d.devices.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["nvptx64-nvidia-cuda sm_80", "nvptx64-nvidia-cuda sm_90"]);
    assert!(
        d.stderr.contains("Device nvptx64-nvidia-cuda sm_80, nvptx64-nvidia-cuda sm_90 (OFFLOAD_ARCH)"),
        "{}",
        d.stderr
    );
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("OFFLOAD_ARCH", "sm_80")]);
    assert_eq!(d.devices.len(), 1);
    assert_eq!(d.devices[0].title, "nvptx64-nvidia-cuda sm_90", "--arch wins");
}

/// AMD GPUs: the target is the specification `cargo offload` writes.
#[test]
fn amd_gpus_use_the_written_target_specification() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--target", "amdgcn-amd-amdhsa", "--arch", "gfx90a"], &[]);
    let dev = &d.devices[0];
    assert_eq!(dev.title, "amdgcn-amd-amdhsa gfx90a");
    let spec = dev.arg("--target").unwrap();
    assert_eq!(Path::new(spec), f.target.join("offload/amdgcn-amd-amdhsa.json"));
    assert!(dev.has("-Zjson-target-spec"));
    let json: String = std::fs::read_to_string(spec).unwrap();
    assert!(json.contains("\"obj-is-bitcode\": true") && json.contains("\"exe-suffix\": \".elf\""), "{json}");
    assert!(dev.rustflags().contains(&"-Ctarget-cpu=gfx90a".into()));
    assert!(!dev.rustflags().iter().any(|x| x.starts_with("-Ctarget-feature=+ptx")));
    assert!(d.embed.contains("code object gfx90a"), "{}", d.embed);
    assert!(f.built_nothing());
}

/// What the unit tests of the checks (`src/select/validation_tests.rs`)
/// show with a scripted `llc`, the real binary prints with the real one:
/// bad architectures, targets, PTX ISA features and configuration are
/// usage errors (exit code 2), reported before anything is compiled (no
/// `Compiling`, no LLVM abort, an empty target directory).
#[test]
fn bad_input_is_rejected_before_any_build() {
    let f = Fixture::new();
    let rejected = |args: &[&str], env: &[(&str, &str)], says: &[&str]| {
        let (code, _, stderr) = f.offload(args, env);
        assert_eq!(code, 2, "{args:?} {env:?}: {stderr}");
        for s in says {
            assert!(stderr.contains(s), "{args:?} {env:?}: {s}: {stderr}");
        }
        assert!(!stderr.contains("Compiling") && !stderr.contains("LLVM ERROR"), "{args:?}: {stderr}");
        assert!(f.built_nothing(), "{args:?}");
    };
    // The real llc's list, with the architectures offload refuses left out.
    rejected(
        &["build", "--arch", "sm_91"],
        &[],
        &[
            "error: unknown architecture `sm_91` for nvptx64-nvidia-cuda (from --arch)",
            "sm_90a",
            "sm_70",
            "--arch sm_90",
        ],
    );
    let (_, _, stderr) = f.offload(&["build", "--arch", "sm_91"], &[]);
    assert!(!stderr.contains("sm_62"), "{stderr}");
    // An AMD architecture: the hint names AMD's tools, not nvidia-smi.
    rejected(
        &["build", "--arch", "gfx9999"],
        &[],
        &[
            "error: unknown architecture `gfx9999` for amdgcn-amd-amdhsa (from --arch)",
            "e.g. `--arch gfx90a` (`rocminfo | grep gfx` or LLVM's `amdgpu-arch` prints it",
        ],
    );
    let (_, _, stderr) = f.offload(&["build", "--arch", "gfx9999"], &[]);
    assert!(!stderr.contains("nvidia-smi"), "{stderr}");
    rejected(
        &["build", "--arch", "sm_60"],
        &[],
        &["error: architecture `sm_60` (from --arch) is older than offload supports: NVIDIA GPUs from sm_70 (Volta) on"],
    );
    rejected(
        &["build", "--target", "x86_64-unknown-linux-gnu"],
        &[],
        &["unknown device target `x86_64-unknown-linux-gnu`"],
    );
    rejected(
        &["build", "--arch", "sm_90"],
        &[("OFFLOAD_DEVICE_RUSTFLAGS", "-C target-feature=+ptx65")],
        &[
            "error: `+ptx65` in OFFLOAD_DEVICE_RUSTFLAGS is below what sm_90 needs: sm_90 code needs PTX ISA 7.8 or later",
            "help: remove it (cargo offload enables `+ptx78`, the minimum for sm_90)",
        ],
    );
    rejected(
        &["build", "--arch", "sm_90"],
        &[("OFFLOAD_DEVICE_RUSTFLAGS", "-Ctarget-feature=+ptx99")],
        &["is newer than the device LLVM"],
    );
    // Names cargo cannot select: a usage error before any pass, with the
    // closest name and the list (cargo's own error came from inside the
    // device pass, which then looked like a failed device build, exit 4).
    rejected(
        &["build", "-p", "fixture_bin_onyl"],
        &[],
        &[
            "error: `--package fixture_bin_onyl` names no package of this workspace or its dependencies",
            "did you mean `fixture_bin_only`?",
            "the workspace's packages are: fixture_bin_only",
        ],
    );
    rejected(
        &["build", "--bin", "nope"],
        &[],
        &[
            "error: `--bin nope` names no binary of this workspace or its dependencies",
            "the workspace's binaries are: fixture_bin_only",
        ],
    );
    // What cargo accepts is not refused: a dependency's package, a glob,
    // and a package the metadata may lack because features enable it.
    for args in [
        &["build", "--dry-run", "-p", "offload"][..],
        &["build", "--dry-run", "-p", "fixture_*"],
        &["build", "--dry-run", "-p", "some-optional-dep", "-F", "some-feature"],
        &["build", "--dry-run", "--bin", "fixture_*"],
    ] {
        let (code, _, stderr) = f.offload(args, &[]);
        assert_eq!(code, 0, "{args:?}: {stderr}");
    }
    rejected(
        &["run", "--example", "demo"],
        &[],
        &[
            "error: `--example demo` names no example of this workspace or its dependencies",
            "the workspace itself has no example",
        ],
    );
    f.edit_manifest(|s| {
        s.replace("[dependencies]", "[package.metadata.offload]\narchs = [\"sm_80\"]\n\n[dependencies]")
    });
    rejected(
        &["build"],
        &[],
        &["[package.metadata.offload] of fixture_bin_only: unknown key `archs` (known: arch, target)"],
    );
}

/// `[package.metadata.offload]` sets the architectures, and a status line
/// says so; `OFFLOAD_ARCH` overrides it, and `--arch` both.
#[test]
fn configuration_in_cargo_toml_and_its_precedence() {
    let f = Fixture::new();
    f.edit_manifest(|s| {
        s.replace("[dependencies]", "[package.metadata.offload]\narch = [\"sm_80\", \"sm_90\"]\n\n[dependencies]")
    });
    let archs = |d: &DryRun| d.devices.iter().map(|p| p.title.clone()).collect::<Vec<_>>();
    let d = f.dry_run(&["build"], &[]);
    assert_eq!(archs(&d), ["nvptx64-nvidia-cuda sm_80", "nvptx64-nvidia-cuda sm_90"]);
    assert!(d.embed.contains("PTX sm_80") && d.embed.contains("PTX sm_90"), "{}", d.embed);
    assert!(d.stderr.contains("(Cargo.toml [package.metadata.offload])"), "{}", d.stderr);
    let d = f.dry_run(&["build"], &[("OFFLOAD_ARCH", "sm_90")]);
    assert_eq!(archs(&d), ["nvptx64-nvidia-cuda sm_90"]);
    let d = f.dry_run(&["build", "--arch", "sm_80"], &[("OFFLOAD_ARCH", "sm_90")]);
    assert_eq!(archs(&d), ["nvptx64-nvidia-cuda sm_80"]);
    assert!(f.built_nothing());
}

/// `core` comes from the device sysroot of the architecture's CPU and PTX
/// ISA version, under `OFFLOAD_CACHE_DIR`, one per (target, CPU,
/// features); `OFFLOAD_BUILD_STD=1` compiles it in the device pass
/// instead (`-Zbuild-std=core`). A dry run builds no sysroot either.
#[test]
fn core_comes_from_a_shared_device_sysroot() {
    let f = Fixture::new();
    let cache = f.dir.parent().unwrap().join("cache");
    let cache_var = ("OFFLOAD_CACHE_DIR", cache.to_str().unwrap());
    let d = f.dry_run(&["build", "--arch", "sm_80,sm_90", "--release"], &[cache_var]);
    let sysroots: Vec<String> = d
        .devices
        .iter()
        .map(|p| {
            let flags = p.rustflags();
            assert!(!p.has("-Zbuild-std=core"), "{:?}", p.argv);
            let at = flags.iter().position(|x| x == "--sysroot").unwrap_or_else(|| panic!("{flags:?}"));
            flags[at + 1].clone()
        })
        .collect();
    for (dir, arch) in sysroots.iter().zip(["sm_80", "sm_90"]) {
        let name = Path::new(dir).strip_prefix(cache.join("sysroot")).unwrap_or_else(|_| panic!("{dir}"));
        assert!(name.to_str().unwrap().starts_with(&format!("nvptx64-nvidia-cuda-{arch}-")), "{dir}");
    }
    assert_ne!(sysroots[0], sysroots[1]);
    // The same sysroot for another profile and another project's copy.
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[cache_var]);
    assert!(d.devices[0].rustflags().contains(&sysroots[1]), "{:?}", d.devices[0].rustflags());
    let other = Fixture::new();
    let d = other.dry_run(&["build", "--arch", "sm_90"], &[cache_var]);
    assert!(d.devices[0].rustflags().contains(&sysroots[1]), "{:?}", d.devices[0].rustflags());
    // A target feature of the user's is a sysroot of its own.
    let d =
        f.dry_run(&["build", "--arch", "sm_90"], &[cache_var, ("OFFLOAD_DEVICE_RUSTFLAGS", "-Ctarget-feature=+ptx80")]);
    assert!(!d.devices[0].rustflags().contains(&sysroots[1]), "{:?}", d.devices[0].rustflags());
    assert!(!cache.join("sysroot").exists(), "a dry run builds no sysroot");
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[cache_var, ("OFFLOAD_BUILD_STD", "1")]);
    assert!(d.devices[0].has("-Zbuild-std=core"), "{:?}", d.devices[0].argv);
    assert!(!d.devices[0].rustflags().iter().any(|x| x == "--sysroot"), "{:?}", d.devices[0].rustflags());
    assert!(f.built_nothing());
}

/// A relative `OFFLOAD_CACHE_DIR` is below the directory the command runs
/// in, for every process (cargo runs the wrapper in each package's
/// directory): the device pass gets its sysroot as an absolute path.
#[test]
fn a_relative_cache_directory_is_below_the_current_one() {
    let f = Fixture::new();
    let d = f.dry_run(&["build", "--arch", "sm_90"], &[("OFFLOAD_CACHE_DIR", "relcache")]);
    let flags = d.devices[0].rustflags();
    let at = flags.iter().position(|x| x == "--sysroot").unwrap_or_else(|| panic!("{flags:?}"));
    let cwd = std::fs::canonicalize(&f.dir).unwrap();
    assert!(Path::new(&flags[at + 1]).starts_with(cwd.join("relcache/sysroot")), "{flags:?}");
}

/// A custom profile reaches both passes, and the image map is the
/// profile's (`tests/e2e.rs` builds in the dev profile only: each profile
/// is a target directory of its own, all dependencies built again).
#[test]
fn a_custom_profile_reaches_both_passes() {
    let f = Fixture::new();
    f.edit_manifest(|s| s + "\n[profile.fast]\ninherits = \"release\"\n");
    let d = f.dry_run(&["build", "--arch", "sm_90", "--profile", "fast", "--bin", "fixture_bin_only"], &[]);
    let (dev, host) = (&d.devices[0], &d.host);
    assert_eq!((dev.arg("--profile"), host.arg("--profile")), (Some("fast"), Some("fast")));
    assert_eq!((dev.arg("--bin"), host.arg("--bin")), (Some("fixture_bin_only"), Some("fixture_bin_only")));
    assert!(host.set("__OFFLOAD_IMAGE_MAP").contains("image-map-fast-sm_90-"), "{:?}", host.env);
    assert!(f.built_nothing());
}

// Toolchain choice as the command line reports it (the rule itself is
// unit-tested in `src/toolchain.rs`): the environment variables, the notes,
// `doctor`, the exit codes. Nothing is built.

/// A script that answers rustc's `-vV` and `--print sysroot` with a
/// sysroot that has no `lib/rustlib/src`.
fn fake_rustc_without_src(dir: &Path) -> PathBuf {
    let sysroot = dir.join("fake-sysroot");
    std::fs::create_dir_all(sysroot.join("lib/rustlib")).unwrap();
    let script = dir.join("fake-rustc");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *sysroot*) echo '{}' ;;\n  *-vV*) printf 'rustc 1.96.0 (fake)\\nhost: x86_64-unknown-linux-gnu\\nLLVM version: 22.1.8\\n' ;;\nesac\n",
            sysroot.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

/// A directory holding a fake `rustup` whose nightly is a rustc with
/// rust-src that reports LLVM `llvm_major` (for which no LLVM tools
/// exist), and a cargo; put it first on `PATH`.
fn fake_rustup_nightly(dir: &Path, llvm_major: u32) -> PathBuf {
    let bin = dir.join("fake-rustup");
    let sysroot = dir.join("fake-nightly");
    std::fs::create_dir_all(sysroot.join("lib/rustlib/src/rust/library/core/src")).unwrap();
    std::fs::write(sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs"), "").unwrap();
    std::fs::create_dir_all(sysroot.join("bin")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let rustc = sysroot.join("bin/rustc");
    let cargo = sysroot.join("bin/cargo");
    let scripts = [
        (
            rustc.clone(),
            format!(
                "#!/bin/sh\ncase \"$*\" in\n  *sysroot*) echo '{}' ;;\n  *-vV*) printf 'rustc 1.99.0-nightly (fake)\\nhost: x86_64-unknown-linux-gnu\\nLLVM version: {llvm_major}.1.0\\n' ;;\nesac\n",
                sysroot.display()
            ),
        ),
        (cargo.clone(), "#!/bin/sh\nexit 1\n".to_string()),
        (
            bin.join("rustup"),
            format!(
                "#!/bin/sh\ncase \"$*\" in\n  'which --toolchain nightly rustc') echo '{}' ;;\n  'which --toolchain nightly cargo') echo '{}' ;;\n  *) exit 1 ;;\nesac\n",
                rustc.display(),
                cargo.display()
            ),
        ),
    ];
    for (path, text) in scripts {
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    bin
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> String {
    let old = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&old)))
        .unwrap()
        .into_string()
        .unwrap()
}

/// A rustc without library sources (`OFFLOAD_RUSTC`, the only candidate
/// then) is a setup error (exit code 3) with both ways to install them.
#[test]
fn missing_rust_src_says_what_to_install() {
    let f = Fixture::new();
    let fake = fake_rustc_without_src(&f.dir);
    let (code, _, stderr) = f.offload(&["build", "--arch", "sm_90"], &[("OFFLOAD_RUSTC", fake.to_str().unwrap())]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("has no library sources (rust-src)"), "{stderr}");
    assert!(stderr.contains("rustup component add rust-src --toolchain nightly"), "{stderr}");
    assert!(stderr.contains("apt-get install rust-web-src"), "{stderr}");
}

/// A rustup nightly with rust-src but without LLVM tools of its LLVM
/// version is skipped for the next complete toolchain (Debian's here), with
/// one note saying why; `doctor` shows the same verdicts.
#[test]
fn incomplete_nightly_is_skipped_for_a_complete_toolchain() {
    let f = Fixture::new();
    let path = path_with(&fake_rustup_nightly(&f.dir, 99));
    let env = [("PATH", path.as_str()), ("OFFLOAD_RUSTC", "")];
    let (code, stdout, stderr) = f.offload(&["build", "--arch", "sm_90", "--dry-run"], &env);
    assert_eq!(code, 0, "{stderr}");
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].starts_with("note: device toolchain rustup nightly ("), "{}", notes[0]);
    assert!(notes[0].contains("rustc 1.99.0-nightly (fake)) skipped: no `llvm-link` from LLVM 99"), "{}", notes[0]);
    assert!(notes[0].contains("`rustup component add llvm-tools --toolchain nightly`"), "{}", notes[0]);
    assert!(
        notes[0].ends_with("; using /usr/bin/rustc"),
        "/usr/bin/rustc must be complete on this machine: {}",
        notes[0]
    );
    assert!(stdout.contains("RUSTC=/usr/bin/rustc "), "{stdout}");
    // -q: no note.
    let (_, _, stderr) = f.offload(&["build", "--arch", "sm_90", "--dry-run", "-q"], &env);
    assert!(!stderr.contains("note:"), "{stderr}");
    let (code, doc, _) = f.cargo_offload(&["doctor"], &env);
    assert_eq!(code, 0, "{doc}");
    let line =
        |what: &str| doc.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("{what}: {doc}")).to_string();
    let nightly = line("device toolchain: rustup nightly");
    assert!(
        nightly.trim_start().starts_with("skipped") && nightly.contains("no `llvm-link` from LLVM 99"),
        "{nightly}"
    );
    assert!(line("device toolchain: /usr/bin/rustc").trim_start().starts_with("used"), "{doc}");
    assert!(line("device rustc").contains("from /usr/bin/rustc"), "{doc}");
}

/// An LLVM tool that is not there is a setup error with both ways to
/// install LLVM's tools.
#[test]
fn missing_llvm_tools_say_what_to_install() {
    let f = Fixture::new();
    let (code, _, stderr) =
        f.offload(&["build", "--arch", "sm_90"], &[("OFFLOAD_LLVM_LINK", "/nonexistent/llvm-link")]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no `llvm-link` from LLVM"), "{stderr}");
    assert!(stderr.contains("apt-get install llvm-"), "{stderr}");
    assert!(stderr.contains("rustup component add llvm-tools"), "{stderr}");
}

/// `doctor` lists every part it found; without rust-src, the part is
/// MISSING, with both install commands, and the exit code is 3.
#[test]
fn doctor_reports_found_and_missing_parts() {
    let f = Fixture::new();
    let (code, out, _) = f.cargo_offload(&["doctor"], &[]);
    assert_eq!(code, 0, "{out}");
    for part in
        ["host cargo", "device rustc", "rust-src", "llvm-link (LLVM", "opt (LLVM", "llc (LLVM", "ptxas", "libdevice"]
    {
        assert!(out.lines().any(|l| l.contains(part)), "{part}: {out}");
    }
    assert!(out.contains("The device toolchain is complete"), "{out}");
    let fake = fake_rustc_without_src(&f.dir);
    let (code, out, _) = f.cargo_offload(&["doctor"], &[("OFFLOAD_RUSTC", fake.to_str().unwrap())]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("skipped  device toolchain: OFFLOAD_RUSTC"), "{out}");
    assert!(out.contains("MISSING  complete device toolchain"), "{out}");
    assert!(out.contains("MISSING  rust-src"), "{out}");
    assert!(out.contains("sudo apt-get install rustc-web cargo-web rust-web-src"), "{out}");
    assert!(out.contains("rustup toolchain install nightly --component rust-src,llvm-tools"), "{out}");
}

/// A flag in `OFFLOAD_DEVICE_RUSTFLAGS` that contradicts the build is a
/// usage error before anything is built (the rules: `devflags.rs`).
#[test]
fn contradicting_device_rustflags_are_refused() {
    let f = Fixture::new();
    for (flags, says) in [
        ("-C target-cpu=sm_90", "`-C target-cpu=sm_90` in OFFLOAD_DEVICE_RUSTFLAGS"),
        ("-C target-feature=+sm_100", "`+sm_100` in OFFLOAD_DEVICE_RUSTFLAGS contradicts the architecture sm_80"),
        ("-C panic=unwind", "`-C panic=unwind` in OFFLOAD_DEVICE_RUSTFLAGS: GPU code cannot unwind"),
        (
            "\"-Copt-level=3\"",
            "`\"-Copt-level=3\"` in OFFLOAD_DEVICE_RUSTFLAGS is quoted: the variable is split at spaces, not read as \
             shell words",
        ),
    ] {
        let out = f.command(&["build", "--arch", "sm_80"], &[("OFFLOAD_DEVICE_RUSTFLAGS", flags)]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains("= help: "), "{flags}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing planned: {}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(f.built_nothing());
}

/// A toolchain probe that does not answer (`rustup which` here) is an error
/// naming it after `OFFLOAD_PROBE_TIMEOUT` seconds, not a hang.
#[test]
fn a_hanging_toolchain_probe_is_named() {
    let f = Fixture::new();
    let path = f.hanging_rustup();
    let start = std::time::Instant::now();
    let out = f
        .command(&["build", "--arch", "sm_80"], &[("PATH", &path), ("OFFLOAD_PROBE_TIMEOUT", "1")])
        .env_remove("OFFLOAD_RUSTC")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(15), "{:?}: {stderr}", start.elapsed());
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error: `rustup which --toolchain nightly rustc` did not answer within 1 s"), "{stderr}");
    assert!(stderr.contains("OFFLOAD_PROBE_TIMEOUT"), "{stderr}");
}

/// Ctrl-C (a SIGINT to `cargo offload` alone) while a probe runs ends the
/// build at once: the probe is killed, nothing else starts.
#[test]
fn an_interruption_during_a_probe_ends_the_build() {
    let f = Fixture::new();
    let path = f.hanging_rustup();
    let start = std::time::Instant::now();
    let child = f
        .command(&["build", "--arch", "sm_80"], &[("PATH", &path)])
        .env_remove("OFFLOAD_RUSTC")
        .env_remove("OFFLOAD_PROBE_TIMEOUT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Past `cargo metadata`, into the probes: until the hanging `rustup`
    // has started (a fixed 3 s sleep before, most of this test's time).
    while !f.rustup_started().exists() {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "the probe did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(12), "{:?}: {stderr}", start.elapsed());
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(stderr.trim(), "error: build interrupted");
    assert!(f.built_nothing());
}

/// A crate whose `offload` has another version than this `cargo offload`
/// (here a stand-in `offload` 0.0.1 by path, as a crate locked to an older
/// release would resolve) is refused before anything is built: exit code 3,
/// both versions named, and the commands that fix it.
#[test]
fn another_offload_version_is_refused() {
    let own = env!("CARGO_PKG_VERSION");
    assert_ne!(own, "0.0.1");
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("dry-run-version-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for (dir, manifest, file) in [
        ("offload", "[package]\nname = \"offload\"\nversion = \"0.0.1\"\nedition = \"2021\"\n", "src/lib.rs"),
        (
            "app",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\
             offload = { path = \"../offload\" }\n\n[workspace]\n",
            "src/main.rs",
        ),
    ] {
        std::fs::create_dir_all(base.join(dir).join("src")).unwrap();
        std::fs::write(base.join(dir).join("Cargo.toml"), manifest).unwrap();
        std::fs::write(base.join(dir).join(file), if dir == "app" { "fn main() {}\n" } else { "" }).unwrap();
    }
    let target = base.join("target");
    let build = || {
        Command::new(env!("CARGO_BIN_EXE_cargo-offload"))
            .args(["offload", "build", "--arch", "sm_90", "--dry-run", "--target-dir"])
            .arg(&target)
            .current_dir(base.join("app"))
            .env("CARGO_TERM_COLOR", "never")
            .env_remove("__OFFLOAD_PHASE")
            .output()
            .unwrap()
    };
    let out = build();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: the workspace uses offload 0.0.1, but this is cargo-offload {own}; they must be the same version"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("`cargo install cargo-offload --version 0.0.1`"), "{stderr}");
    assert!(stderr.contains(&format!("`cargo update -p offload --precise {own}`")), "{stderr}");
    assert!(!target.exists(), "nothing built");
    // The `offload` of a clone (a `cargo-offload` beside it): that clone's
    // cargo offload, installed by path.
    let installer = base.join("cargo-offload");
    std::fs::create_dir_all(&installer).unwrap();
    std::fs::write(installer.join("Cargo.toml"), "[package]\nname = \"cargo-offload\"\n").unwrap();
    let out = build();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let want = format!(
        "offload 0.0.1 comes from a checkout: install its cargo offload with `cargo install --path {}`",
        installer.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("--precise"), "{stderr}");
    let _ = std::fs::remove_dir_all(&base);
}

/// Two kinds of `--message-format` are a usage error, as cargo makes them,
/// before anything is planned.
#[test]
fn two_kinds_of_message_format_are_refused() {
    let f = Fixture::new();
    let (code, stdout, stderr) = f.offload(&["check", "--message-format=json,short", "--dry-run"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.starts_with("error: cannot specify two kinds of `message-format` arguments"), "{stderr}");
    assert!(stdout.is_empty(), "nothing planned: {stdout}");
    assert!(f.built_nothing());
}

/// An empty item in a list of architectures (from `--arch` or
/// `OFFLOAD_ARCH`) is a usage error naming the list, before any build.
#[test]
fn empty_architectures_are_refused() {
    let f = Fixture::new();
    for (args, env, value, from) in [
        (&["build", "--arch", "sm_80,,sm_90"][..], None, "sm_80,,sm_90", "--arch"),
        (&["build", "--arch", "sm_80,"], None, "sm_80,", "--arch"),
        (&["build"], Some("sm_80,,sm_90"), "sm_80,,sm_90", "OFFLOAD_ARCH"),
    ] {
        let env: Vec<(&str, &str)> = env.map(|a| ("OFFLOAD_ARCH", a)).into_iter().collect();
        let (code, stdout, stderr) = f.offload(&[args, &["--dry-run"]].concat(), &env);
        assert_eq!(code, 2, "{args:?} {env:?}: {stderr}");
        let says =
            format!("error: `{value}` (from {from}) has an empty architecture: separate architectures with one comma");
        assert!(stderr.contains(&says), "{args:?} {env:?}: {stderr}");
        assert!(stdout.is_empty(), "nothing planned: {stdout}");
    }
    assert!(f.built_nothing());
}
