//! Errors of `cargo offload` and its exit codes, documented in one place.
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | success |
//! | 1 | an I/O or internal error (message says which file or step) |
//! | 2 | bad command line (printed by clap) |
//! | 3 | the device toolchain is incomplete (rustc with rust-src, LLVM tools) |
//! | 4 | the device pass failed to compile or link |
//! | 5 | the selected binaries define no kernels |
//! | 6 | embedding the device image failed (ptxas, object writing) |
//! | 130 | interrupted (Ctrl-C, SIGINT or SIGTERM, to `cargo offload` or to a tool it runs) |
//! | other | the host `cargo` (or the program it ran) exited with this code |

use std::path::PathBuf;

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

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("no device compiler found: tried {tried}")]
    NoDeviceRustc { tried: String, hint: String },

    #[error("`{rustc}` has no library sources (rust-src), which `-Zbuild-std=core` needs to build `core` for the GPU")]
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

    #[error("unknown architecture `{arch}` for {target} (from {from})")]
    UnknownArch { arch: String, target: String, known: Vec<String>, from: &'static str },

    #[error("architecture `{arch}` (from {from}) is older than offload supports: NVIDIA GPUs from sm_70 (Volta) on")]
    ArchTooOld { arch: String, from: &'static str },

    #[error("unknown device target `{0}`: use nvptx64-nvidia-cuda (NVIDIA) or amdgcn-amd-amdhsa (AMD)")]
    UnknownTarget(String),

    #[error("the device pass failed ({what})")]
    DeviceBuild { what: String, hints: Vec<String> },

    #[error("no kernels: {binaries} define(s) no `#[offload::kernel]` function")]
    NoKernels { binaries: String },

    #[error("could not run `{program}`: {source}")]
    Spawn { program: String, #[source] source: std::io::Error },

    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, #[source] source: std::io::Error },

    #[error("`cargo metadata` failed: {0}")]
    Metadata(String),

    #[error("ptxas failed to assemble {} for {arch}:\n{stderr}", ptx.display())]
    Ptxas { ptx: PathBuf, arch: String, stderr: String },

    #[error("{0}")]
    Usage(String),

    #[error(transparent)]
    Ptx(#[from] crate::ptx::PtxError),

    /// Ctrl-C, SIGINT or SIGTERM (see `interrupt`).
    #[error("build interrupted")]
    Interrupted,
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::NoDeviceRustc { .. }
            | CliError::MissingRustSrc { .. }
            | CliError::Tools(_)
            | CliError::ToolsOf { .. } => exit::SETUP,
            CliError::UnknownArch { .. }
            | CliError::ArchTooOld { .. }
            | CliError::UnknownTarget(_)
            | CliError::Usage(_)
            | CliError::Ptx(_) => exit::USAGE,
            CliError::DeviceBuild { .. } => exit::DEVICE_BUILD,
            CliError::NoKernels { .. } => exit::NO_KERNELS,
            CliError::Ptxas { .. } => exit::EMBED,
            CliError::Interrupted => exit::INTERRUPTED,
            CliError::Spawn { .. } | CliError::Io { .. } | CliError::Metadata(_) => exit::INTERNAL,
        }
    }

    /// What to do about it, printed under the error.
    pub fn hints(&self) -> Vec<String> {
        match self {
            CliError::NoDeviceRustc { hint, .. } | CliError::MissingRustSrc { hint, .. } => vec![hint.clone()],
            CliError::ArchTooOld { .. } => vec![
                "offload's device code uses acquire/release atomics (PTX ISA 6.0, sm_70 and later) \
                 to report kernel panics; older GPUs cannot run it"
                    .into(),
                "pass your GPU's architecture if it is newer, e.g. `--arch sm_80` \
                 (`nvidia-smi --query-gpu=compute_cap --format=csv` prints 8.0 for sm_80)"
                    .into(),
            ],
            CliError::UnknownArch { known, target, arch, .. } => {
                let example = if target.starts_with("nvptx") { "sm_90" } else { "gfx90a" };
                let mut sorted: Vec<String> =
                    known.iter().filter(|a| !nvptx_too_old(a)).cloned().collect();
                // natural order: sm_20 < sm_90 < sm_100
                sorted.sort_by_key(|a| {
                    let digits: String = a.chars().filter(|c| c.is_ascii_digit()).collect();
                    (a.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>(), digits.len(), a.clone())
                });
                let mut h = vec![
                    format!("architectures LLVM knows for {target}: {}", sorted.join(", ")),
                    format!("pass your GPU's, e.g. `--arch {example}` (NVIDIA: `nvidia-smi --query-gpu=compute_cap --format=csv` prints 9.0 for sm_90)"),
                ];
                if arch.starts_with("gfx") && target.starts_with("nvptx") {
                    h.push(format!("`{arch}` is an AMD GPU: add `--target amdgcn-amd-amdhsa`"));
                } else if arch.starts_with("sm_") && target.starts_with("amdgcn") {
                    h.push(format!("`{arch}` is an NVIDIA GPU: use `--target nvptx64-nvidia-cuda` (the default)"));
                }
                h
            }
            CliError::DeviceBuild { hints, .. } => hints.clone(),
            CliError::Ptx(e) => vec![e.hint()],
            CliError::NoKernels { .. } => vec![
                "mark a function `#[offload::kernel]` and launch it from host code, e.g. `my_kernel(offload::for_len(n), &x, &mut y)?`".into(),
                "a kernel inside host-only code (`#[offload::host]`, `#[cfg(not(offload_device))]`) is not compiled \
                 for the device: move it out, and keep only host code there"
                    .into(),
            ],
            CliError::Ptxas { .. } => vec![
                "the PTX itself is kept; set OFFLOAD_PTXAS= (empty) to skip assembling cubins and let the driver JIT-compile the PTX".into(),
            ],
            _ => Vec::new(),
        }
    }

    /// Facts that explain the error, printed under it before the hints.
    pub fn notes(&self) -> Vec<String> {
        match self {
            CliError::MissingRustSrc { others, .. } | CliError::ToolsOf { others, .. } => others.clone(),
            _ => Vec::new(),
        }
    }

    /// Prints the error once, with its causes and hints, the way cargo does.
    pub fn report(&self) {
        use std::error::Error as _;
        let mut msg = format!("{}{self}", crate::status::error_prefix());
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
        eprintln!("{msg}");
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// Whether an NVIDIA architecture (`sm_60`, `sm_90a`) predates sm_70, the
/// oldest offload supports (see [`CliError::ArchTooOld`]).
pub fn nvptx_too_old(arch: &str) -> bool {
    arch.strip_prefix("sm_")
        .map(|n| n.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n < 70)
}
