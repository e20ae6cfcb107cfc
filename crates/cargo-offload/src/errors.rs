//! Errors of `cargo offload` and of its rustc wrapper phases, how they are
//! printed ([`CliError::report`], the one place), and the exit codes,
//! documented in one table (nextest's `errors.rs` and `exit_codes.rs` are
//! the model).
//!
//! | code | constant | meaning |
//! | --- | --- | --- |
//! | 0 | [`exit::OK`] | success |
//! | 1 | [`exit::INTERNAL`] | an internal step failed: a file could not be read or written, a program could not be started, `cargo metadata` failed, a tool's output was unreadable (the message names the file or step; not the user's command line) |
//! | 2 | [`exit::USAGE`] | bad command line (printed by clap) or configuration: `OFFLOAD_CACHE_SIZE`, an `OFFLOAD_CACHE_DIR` that is not a directory, a `--package`, `--bin`, `--example`, `--test` or `--bench` name that selects nothing, `--arch`, `--target`, `OFFLOAD_ARCH`, `[package.metadata.offload]`, a flag in `OFFLOAD_DEVICE_RUSTFLAGS` that is quoted (the variable is split at spaces, not shell-parsed) or contradicts the build (a PTX ISA or `sm_` feature, `-C target-cpu`, `-C panic=unwind`), a profile that strips the symbols generic kernels need |
//! | 3 | [`exit::SETUP`] | the device toolchain is incomplete (rustc with rust-src, its cargo, LLVM tools, `offload-linker` beside `cargo-offload`), or a tool asked about it (`rustc -vV`, `rustup which`, `llc`, `nvidia-smi`) did not answer in time, or `cargo-offload` and the crate's `offload` are of different versions |
//! | 4 | [`exit::DEVICE_BUILD`] | the device pass failed to compile or link (in `check` and `clippy`: device code has errors the host pass does not), or a binary launches kernels its device image lacks |
//! | 5 | [`exit::NO_KERNELS`] | the selected binaries define no kernels |
//! | 6 | [`exit::EMBED`] | embedding the device image failed (ptxas, the image object) |
//! | 130 | [`exit::INTERRUPTED`] | interrupted (Ctrl-C, SIGINT or SIGTERM, to `cargo offload` or to a tool it runs) |
//! | other | | the host `cargo` (or the program it ran) exited with this code; in the wrapper phases, rustc's |
//!
//! In the wrapper phases the code goes to cargo, which reports the failed
//! rustc (`process didn't exit successfully`) and exits with its own code
//! (101), which `cargo offload` passes on. A rustc ended by a signal ends
//! the wrapper by the same signal (`phases::rustc`), so that cargo reports
//! the signal, and an interrupted rustc is an interrupted build (130).

use std::path::{Path, PathBuf};

use offload_linker::ToolError;

/// Exit codes; see the module docs.
pub mod exit {
    pub const OK: i32 = 0;
    pub const INTERNAL: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const SETUP: i32 = 3;
    pub const DEVICE_BUILD: i32 = 4;
    pub const NO_KERNELS: i32 = 5;
    pub const EMBED: i32 = 6;
    /// 128 + SIGINT, as shells report Ctrl-C (see `interrupt`).
    pub const INTERRUPTED: i32 = 130;
}

/// A list of architectures (`--arch`, `OFFLOAD_ARCH`, `Cargo.toml`) that
/// names none, or has an empty item; a usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ArchListError {
    /// `from` is set but names no architecture (`--arch ''`, `OFFLOAD_ARCH=,`).
    #[error("{from} names no architecture")]
    NoArch { from: &'static str },

    /// `value` (from `from`) has an empty item: two commas in a row, or one
    /// at an end (`--arch sm_80,,sm_90`, `--arch sm_80,`).
    #[error(
        "`{value}` (from {from}) has an empty architecture: separate architectures with one comma, e.g. `sm_80,sm_90`"
    )]
    EmptyArch { value: String, from: &'static str },
}

/// Every failure of `cargo offload` and its wrapper phases, grouped by exit
/// code ([`CliError::exit_code`]). The message says what failed; the cause
/// (`#[source]`) is printed below it, then notes and hints.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    // ---- 2: command line and configuration
    #[error("unknown architecture `{arch}` for {target} (from {from})")]
    UnknownArch {
        arch: String,
        target: String,
        /// The architectures LLVM knows for `target` that offload supports,
        /// in natural order.
        known: Vec<String>,
        from: &'static str,
    },

    #[error("architecture `{arch}` (from {from}) is older than offload supports: NVIDIA GPUs from sm_70 (Volta) on")]
    ArchTooOld { arch: String, from: &'static str },

    #[error("unknown device target `{0}`: use nvptx64-nvidia-cuda (NVIDIA) or amdgcn-amd-amdhsa (AMD)")]
    UnknownTarget(String),

    #[error("--arch is required for amdgcn-amd-amdhsa (e.g. --arch gfx90a)")]
    AmdNeedsArch,

    #[error(transparent)]
    ArchList(#[from] ArchListError),

    /// `[package.metadata.offload]` (or the workspace's) is invalid.
    #[error("{table}: {problem}")]
    Config { table: String, problem: String },

    /// `--package`, `--bin`, `--example`, `--test` or `--bench` (`flag`)
    /// names nothing cargo could select: no package of the workspace or
    /// its dependencies, no such target in any workspace member. cargo
    /// itself would refuse it; caught first so that it is a usage error,
    /// not a failed device pass.
    #[error("`{flag} {name}` names no {what} of {among}")]
    NoSuchSelection {
        flag: &'static str,
        name: String,
        what: &'static str,
        among: &'static str,
        /// The workspace's own packages or targets of that kind.
        known: Vec<String>,
    },

    #[error(transparent)]
    Ptx(#[from] crate::ptx::PtxError),

    #[error(transparent)]
    DeviceFlags(#[from] crate::devflags::FlagError),

    #[error("`{}` launches generic kernels, but it has no symbol table to read their instantiations from", exe.display())]
    StrippedBinary { exe: PathBuf },

    /// `OFFLOAD_CACHE_SIZE` or `clean --cache --max-size` is not a size.
    #[error("{from}: {problem}")]
    CacheSize { from: &'static str, problem: String },

    /// The cache directory (`OFFLOAD_CACHE_DIR`, else `$XDG_CACHE_HOME/offload`
    /// or `~/.cache/offload`) exists and is not a directory.
    #[error("the offload cache `{}` is not a directory", path.display())]
    CacheDir { path: PathBuf },

    // ---- 3: device toolchain
    #[error("no device compiler found: tried {tried}")]
    NoDeviceRustc { tried: String, hint: String },

    #[error("`{}` has no library sources (rust-src), which `-Zbuild-std=core` needs to build `core` for the GPU", rustc.display())]
    MissingRustSrc {
        rustc: PathBuf,
        hint: String,
        /// The other candidates and why they were skipped.
        others: Vec<String>,
    },

    #[error(transparent)]
    Tools(#[from] ToolError),

    /// No complete toolchain; this candidate got furthest.
    #[error("device toolchain {origin}: {error}")]
    ToolsOf {
        origin: String,
        error: ToolError,
        /// The other candidates and why they were skipped.
        others: Vec<String>,
    },

    #[error("`offload-linker` is missing beside {}", beside.display())]
    LinkerMissing { beside: PathBuf },

    /// The workspace resolves `offload` to `found` (one or more versions,
    /// from `cargo metadata`), not to this `cargo offload`'s own version.
    #[error(
        "the workspace uses offload {}, but this is cargo-offload {own}; they must be the same version",
        found.join(" and ")
    )]
    OffloadVersion {
        own: String,
        found: Vec<String>,
        /// Versions that come from a path dependency, with the
        /// `crates/cargo-offload` directory of that checkout.
        checkouts: Vec<(String, PathBuf)>,
    },

    #[error("{} cannot print the amdgcn-amd-amdhsa target: {stderr}", rustc.display())]
    TargetSpec { rustc: PathBuf, stderr: String },

    /// A probe of a tool (`child::probe`) did not exit within `limit`.
    #[error("`{probe}` did not answer within {} s", limit.as_secs_f64())]
    ProbeTimedOut { probe: String, limit: std::time::Duration },

    // ---- 4: device pass
    #[error("the device pass failed ({what})")]
    DeviceBuild { what: String, hints: Vec<String> },

    /// Kernels a binary can launch that its image lacks: (symbol, where
    /// the kernel is defined).
    #[error(
        "{} kernel(s) that `{binary}` can launch are missing from its device image:{}",
        kernels.len(),
        kernels.iter().map(|(s, at)| format!("\n  `{s}`, defined at {at}")).collect::<String>()
    )]
    MissingKernels { binary: String, kernels: Vec<(String, String)> },

    /// Instantiations of generic kernels a binary launches that its image
    /// lacks: (generic symbol, type arguments, where the kernel is defined).
    #[error(
        "{} instantiation(s) of generic kernels that `{binary}` launches are missing from its device image:{}",
        instances.len(),
        instances.iter().map(|(b, a, at)| format!("\n  `{b}` for `{a}`, generic kernel defined at {at}")).collect::<String>()
    )]
    MissingInstances { binary: String, instances: Vec<(String, String, String)> },

    #[error(
        "`{binary}` launches a generic kernel of crate `{krate}` with the type arguments `{args}`, which include a \
         type defined in `{binary}`"
    )]
    ForeignTypeArgument { binary: String, krate: String, args: String },

    // ---- 5
    #[error("no kernels: {binaries} define(s) no `#[offload::kernel]` function")]
    NoKernels { binaries: String },

    // ---- 6: embedding
    #[error("ptxas failed to assemble {} for {arch}:\n{stderr}", ptx.display())]
    Ptxas { ptx: PathBuf, arch: String, stderr: String },

    #[error("embedding device images is not supported on host architecture {0}")]
    HostArch(String),

    #[error("could not write the image object")]
    ObjectWrite(#[source] object::write::Error),

    // ---- 130
    /// Ctrl-C, SIGINT or SIGTERM (see `interrupt`).
    #[error("build interrupted")]
    Interrupted,

    // ---- 1: internal steps
    #[error("could not run `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },

    /// `op` is what was done to `path`: `could not write`, `could not read`, …
    #[error("{op} {}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("`cargo metadata` failed")]
    Metadata(#[source] cargo_metadata::Error),

    #[error("unreadable target specification from {}", rustc.display())]
    TargetSpecJson {
        rustc: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl CliError {
    /// `map_err(CliError::io("could not write", &path))`.
    pub fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> CliError + 'p {
        move |source| CliError::Io { op, path: path.to_path_buf(), source }
    }

    /// `map_err(CliError::spawn(&program))`.
    pub fn spawn(program: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
        move |source| CliError::Spawn { program: program.display().to_string(), source }
    }

    /// The exit code (see the module docs).
    pub fn exit_code(&self) -> i32 {
        use CliError::*;
        match self {
            UnknownArch { .. }
            | ArchTooOld { .. }
            | UnknownTarget(_)
            | AmdNeedsArch
            | ArchList(_)
            | Config { .. }
            | NoSuchSelection { .. }
            | Ptx(_)
            | DeviceFlags(_)
            | StrippedBinary { .. }
            | CacheSize { .. }
            | CacheDir { .. } => exit::USAGE,
            NoDeviceRustc { .. }
            | MissingRustSrc { .. }
            | Tools(_)
            | ToolsOf { .. }
            | LinkerMissing { .. }
            | TargetSpec { .. }
            | OffloadVersion { .. }
            | ProbeTimedOut { .. } => exit::SETUP,
            DeviceBuild { .. } | MissingKernels { .. } | MissingInstances { .. } | ForeignTypeArgument { .. } => {
                exit::DEVICE_BUILD
            }
            NoKernels { .. } => exit::NO_KERNELS,
            Ptxas { .. } | HostArch(_) | ObjectWrite(_) => exit::EMBED,
            Interrupted => exit::INTERRUPTED,
            Spawn { .. } | Io { .. } | Metadata(_) | TargetSpecJson { .. } => exit::INTERNAL,
        }
    }

    /// What to do about it, printed under the error.
    pub fn hints(&self) -> Vec<String> {
        use CliError::*;
        match self {
            NoDeviceRustc { hint, .. } | MissingRustSrc { hint, .. } => vec![hint.clone()],
            ArchTooOld { .. } => vec![
                "offload's device code uses acquire/release atomics (PTX ISA 6.0, sm_70 and later) \
                 to report kernel panics; older GPUs cannot run it"
                    .into(),
                "pass your GPU's architecture if it is newer, e.g. `--arch sm_80` \
                 (`nvidia-smi --query-gpu=compute_cap --format=csv` prints 8.0 for sm_80)"
                    .into(),
            ],
            UnknownArch { known, target, arch, .. } => unknown_arch_hints(arch, target, known),
            Config { .. } => {
                vec!["the table takes `arch` (a string or a list of strings, e.g. `[\"sm_80\", \"sm_90\"]`) and \
                 `target` (a string)"
                    .into()]
            }
            CacheSize { .. } => {
                vec!["write a size such as `2G`, `500M` or `0` (K, M, G and T are powers of 1024)".into()]
            }
            CacheDir { .. } => vec![CACHE_DIR_HINT.into()],
            StrippedBinary { .. } => vec![STRIPPED_HINT.into()],
            LinkerMissing { .. } => {
                vec!["install both with `cargo install cargo-offload` (from a clone: `cargo install --path \
                 crates/cargo-offload`)"
                    .into()]
            }
            OffloadVersion { own, found, checkouts } => offload_version_hints(own, found, checkouts),
            NoSuchSelection { what, known, name, .. } => selection_hints(what, name, known),
            TargetSpec { .. } => vec!["use a device toolchain whose rustc knows amdgcn-amd-amdhsa".into()],
            ProbeTimedOut { probe, .. } => vec![format!(
                "run `{probe}` by hand to see what it waits for (`cargo offload doctor` lists the tools); set \
                 OFFLOAD_PROBE_TIMEOUT=<seconds> to wait longer"
            )],
            DeviceBuild { hints, .. } => hints.clone(),
            MissingInstances { .. } => {
                vec!["`cargo offload` compiles the instantiations it finds in a host build first; if this persists, \
                 report it with the output of `cargo offload build -vv`"
                    .into()]
            }
            MissingKernels { .. } => {
                vec!["the device pass did not compile them. A kernel defined inside host-only code (an \
                 `#[offload::host]` item, `fn main`, code under `#[cfg(not(offload_device))]`, or a dependency \
                 that only host code declares) exists only on the host: define it at module level, outside \
                 host-only code"
                    .into()]
            }
            ForeignTypeArgument { krate, .. } => {
                vec![format!("define the type in `{krate}` or in a crate that both depend on")]
            }
            Ptx(e) => vec![e.hint()],
            DeviceFlags(e) => vec![e.hint()],
            NoKernels { .. } => vec![
                "mark a function `#[offload::kernel]` and launch it from host code, e.g. \
                 `my_kernel(offload::for_len(n), &x, &mut y)?`"
                    .into(),
                "a kernel inside host-only code (`#[offload::host]`, `#[cfg(not(offload_device))]`) is not compiled \
                 for the device: move it out, and keep only host code there"
                    .into(),
            ],
            Ptxas { .. } => {
                vec!["the PTX itself is kept; set OFFLOAD_PTXAS= (empty) to skip assembling cubins and let the driver \
                 JIT-compile the PTX"
                    .into()]
            }
            HostArch(_) => vec!["offload embeds images in ELF hosts: x86_64, aarch64, riscv64, powerpc64".into()],
            Spawn { .. } => vec!["check that the program exists and is executable (`cargo offload doctor`)".into()],
            Metadata(_) => vec!["the cause is cargo's own error: fix the manifest or the command line it names".into()],
            Io { .. } | ObjectWrite(_) | TargetSpecJson { .. } => vec![
                "this is an internal step of `cargo offload`: check that the target directory is writable and has \
                 space; if it is, report this with the output of `cargo offload build -vv`"
                    .into(),
            ],
            UnknownTarget(_) | AmdNeedsArch | ArchList(_) | Tools(_) | ToolsOf { .. } | Interrupted => Vec::new(),
        }
    }

    /// Facts that explain the error, printed under it before the hints.
    pub fn notes(&self) -> Vec<String> {
        match self {
            CliError::MissingRustSrc { others, .. } | CliError::ToolsOf { others, .. } => others.clone(),
            CliError::OffloadVersion { .. } => vec![
                "the code `#[offload::kernel]` generates, the device linker and the image format of one release go \
                 together, so `cargo-offload` builds only crates whose `offload` has its version"
                    .into(),
            ],
            CliError::ForeignTypeArgument { .. } => vec![
                "an instantiation is compiled into the device code of the kernel's crate, which cannot name types \
                 of the crates that use it"
                    .into(),
            ],
            _ => Vec::new(),
        }
    }

    /// The error as printed: `error: <message>`, each cause under `Caused
    /// by:`, then `= note:` and `= help:` lines, as cargo prints errors.
    pub fn render(&self, prefix: &str) -> String {
        use std::error::Error as _;
        let mut msg = format!("{prefix}{self}");
        let mut source = self.source();
        while let Some(s) = source {
            msg.push_str(&format!("\n\nCaused by:\n  {s}"));
            source = s.source();
        }
        for n in self.notes() {
            msg.push_str(&format!("\n  = note: {n}"));
        }
        for h in self.hints() {
            msg.push_str(&format!("\n  = help: {h}"));
        }
        msg
    }

    /// Prints the error once, to stderr (see [`CliError::render`]).
    pub fn report(&self) {
        eprintln!("{}", self.render(crate::status::error_prefix()));
    }
}

/// The hint of [`CliError::CacheDir`].
const CACHE_DIR_HINT: &str = "point OFFLOAD_CACHE_DIR at a directory (it is created if missing), or unset it to use \
     `$XDG_CACHE_HOME/offload` or `~/.cache/offload`";

/// The hint of [`CliError::StrippedBinary`].
const STRIPPED_HINT: &str =
    "the profile strips symbols (`strip = true` or `\"symbols\"`); use `strip = \"debuginfo\"` \
     or `false` with `cargo offload`";

/// How to make `cargo offload` (version `own`) and the workspace's
/// `offload` (versions `found`) agree: install the matching cargo offload,
/// or move the workspace to `own`.
fn offload_version_hints(own: &str, found: &[String], checkouts: &[(String, PathBuf)]) -> Vec<String> {
    let mut h: Vec<String> = found
        .iter()
        .filter(|v| *v != own)
        .map(|v| match checkouts.iter().find(|(c, _)| c == v) {
            Some((_, dir)) => format!(
                "offload {v} comes from a checkout: install its cargo offload with `cargo install --path {}`",
                dir.display()
            ),
            None => format!(
                "to build with offload {v}, install its cargo offload: `cargo install cargo-offload --version {v}`"
            ),
        })
        .collect();
    if checkouts.is_empty() {
        h.push(format!(
            "or move the workspace to offload {own}: `cargo update -p offload --precise {own}`, after changing \
             the dependency to `offload = \"{own}\"` in Cargo.toml if its requirement excludes {own}"
        ));
    } else {
        h.push(format!("or point the dependency at a checkout of offload {own}, or at `offload = \"{own}\"`"));
    }
    h
}

/// The hints of [`CliError::UnknownArch`].
fn unknown_arch_hints(arch: &str, target: &str, known: &[String]) -> Vec<String> {
    let find = if target.starts_with("nvptx") {
        "pass your GPU's, e.g. `--arch sm_90` (`nvidia-smi --query-gpu=compute_cap --format=csv` prints 9.0 for sm_90)"
    } else {
        "pass your GPU's, e.g. `--arch gfx90a` (`rocminfo | grep gfx` or LLVM's `amdgpu-arch` prints it: gfx90a for \
         an MI210 or MI250, gfx942 for an MI300)"
    };
    let mut h = vec![format!("architectures LLVM knows for {target}: {}", known.join(", ")), find.to_string()];
    if arch.starts_with("gfx") && target.starts_with("nvptx") {
        h.push(format!("`{arch}` is an AMD GPU: add `--target amdgcn-amd-amdhsa`"));
    } else if arch.starts_with("sm_") && target.starts_with("amdgcn") {
        h.push(format!("`{arch}` is an NVIDIA GPU: use `--target nvptx64-nvidia-cuda` (the default)"));
    }
    h
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// The end of every phase: its exit code, with an error reported once. An
/// interrupted build is reported as interrupted, whatever a dying child made
/// fail.
pub fn finish(result: Result<i32>) -> i32 {
    match result {
        // The program (or the host cargo) was interrupted: it has said so.
        Ok(code) if code != exit::OK && crate::interrupt::interrupted() => exit::INTERRUPTED,
        Ok(code) => code,
        Err(_) if crate::interrupt::interrupted() => {
            CliError::Interrupted.report();
            exit::INTERRUPTED
        }
        Err(e) => {
            e.report();
            e.exit_code()
        }
    }
}

/// The hints of [`CliError::NoSuchSelection`]: the closest names (at most
/// two edits), then the list (up to 20).
fn selection_hints(what: &str, name: &str, known: &[String]) -> Vec<String> {
    let mut hints = Vec::new();
    let close: Vec<&String> = known.iter().filter(|k| strsim::damerau_levenshtein(k, name) <= 2).collect();
    if let Some(k) = close.first() {
        hints.push(format!("did you mean `{k}`?"));
    }
    if known.is_empty() {
        hints.push(format!("the workspace itself has no {what}"));
    } else {
        let shown: Vec<&str> = known.iter().take(20).map(String::as_str).collect();
        let more = if known.len() > 20 { format!(" and {} more", known.len() - 20) } else { String::new() };
        let whats = match what.strip_suffix('y') {
            Some(stem) => format!("{stem}ies"),
            None => format!("{what}s"),
        };
        hints.push(format!("the workspace's {whats} are: {}{more}", shown.join(", ")));
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's "Exit codes" paragraph and the table above name the
    /// same codes with the same meanings.
    #[test]
    fn readme_states_the_exit_codes() {
        let readme = include_str!("../../../README.md");
        let para = readme.split("\nExit codes").nth(1).expect("an Exit codes paragraph").split("\n\n").next().unwrap();
        let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
        let table = include_str!("errors.rs");
        for (code, readme_says, table_says) in [
            (exit::OK, "0 success", "success"),
            (exit::INTERNAL, "1 internal failure", "an internal step failed"),
            (exit::USAGE, "2 bad command line or configuration", "bad command line"),
            (exit::SETUP, "3 incomplete device toolchain", "the device toolchain is incomplete"),
            (exit::DEVICE_BUILD, "4 device pass failed", "the device pass failed"),
            (exit::NO_KERNELS, "5 no kernels", "the selected binaries define no kernels"),
            (exit::EMBED, "6 embedding failed", "embedding the device image failed"),
            (exit::INTERRUPTED, "130 interrupted", "interrupted"),
        ] {
            assert!(
                readme_says.starts_with(&format!("{code} ")) && para.contains(readme_says),
                "README: {readme_says}: {para}"
            );
            let row = table.lines().find(|l| l.starts_with(&format!("//! | {code} |"))).expect("a row");
            assert!(row.contains(table_says), "{row}");
        }
        assert!(para.contains("otherwise the host cargo's (or your program's) code"), "{para}");
    }

    /// Every kind of failure: its exit code, and its text with causes,
    /// notes and hints, as printed.
    #[test]
    fn errors_print_once_with_causes_and_hints() {
        let gone = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        let e = CliError::io("could not write", Path::new("/t/img.o"))(gone());
        assert_eq!(e.exit_code(), exit::INTERNAL);
        let text = e.render("error: ");
        assert!(
            text.starts_with(
                "error: could not write /t/img.o\n\nCaused by:\n  No such file or directory (os error 2)\n  = help: "
            ),
            "{text}"
        );
        assert_eq!(text.matches("os error 2").count(), 1, "the cause once: {text}");
        let e = CliError::ForeignTypeArgument { binary: "app".into(), krate: "lib".into(), args: "(app::V,)".into() };
        assert_eq!(e.exit_code(), exit::DEVICE_BUILD);
        assert_eq!(
            e.render("error: "),
            "error: `app` launches a generic kernel of crate `lib` with the type arguments `(app::V,)`, which include \
             a type defined in `app`\n  = note: an instantiation is compiled into the device code of the kernel's \
             crate, which cannot name types of the crates that use it\n  = help: define the type in `lib` or in a \
             crate that both depend on"
        );
        let e =
            CliError::MissingKernels { binary: "app".into(), kernels: vec![("k_1".into(), "src/main.rs:3".into())] };
        assert!(e.render("").starts_with(
            "1 kernel(s) that `app` can launch are missing from its device image:\n  `k_1`, defined at src/main.rs:3\n  = help: the device pass did not compile them."
        ));
        // Each vendor's tool that prints a GPU's architecture.
        let unknown = |arch: &str, target: &str| CliError::UnknownArch {
            arch: arch.into(),
            target: target.into(),
            known: vec!["gfx90a".into(), "gfx942".into()],
            from: "--arch",
        };
        let amd = unknown("gfx9999", "amdgcn-amd-amdhsa").render("error: ");
        assert!(amd.contains("= help: pass your GPU's, e.g. `--arch gfx90a` (`rocminfo | grep gfx`"), "{amd}");
        assert!(!amd.contains("nvidia-smi"), "{amd}");
        let nv = unknown("sm_91", "nvptx64-nvidia-cuda").render("error: ");
        assert!(nv.contains("`nvidia-smi --query-gpu=compute_cap --format=csv`") && !nv.contains("rocminfo"), "{nv}");
        // Internal failures are not usage errors.
        assert_eq!(CliError::LinkerMissing { beside: "/b/cargo-offload".into() }.exit_code(), exit::SETUP);
        assert_eq!(CliError::HostArch("s390x".into()).exit_code(), exit::EMBED);
        assert_eq!(CliError::Config { table: "t".into(), problem: "p".into() }.exit_code(), exit::USAGE);
        assert_eq!(CliError::spawn(Path::new("/x/rustc"))(gone()).exit_code(), exit::INTERNAL);
    }
}
