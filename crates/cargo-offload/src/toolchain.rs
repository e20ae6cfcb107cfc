//! Finding the device toolchain.
//!
//! The device pass needs a rustc that can build `core` for a GPU target with
//! `-Zbuild-std=core`: its library sources (rust-src), the cargo of the
//! same release, and LLVM tools of its LLVM major version
//! (`offload_linker::tools`). Candidates, in order:
//!
//! 1. `OFFLOAD_RUSTC` (and `OFFLOAD_CARGO`, default: the `cargo` beside it);
//!    when set, the only candidate;
//! 2. rustup's `nightly` toolchain (`rustup which --toolchain nightly rustc`);
//! 3. `/usr/bin/rustc` and `/usr/bin/cargo`, Debian's `rustc-web` /
//!    `cargo-web` with `rust-web-src`.
//!
//! The first *complete* candidate wins: its rustc runs, reports a sysroot
//! that holds rust-src, its cargo exists, and LLVM tools of its LLVM major
//! version are found. Each candidate skipped before it is named in one
//! `note:` line with the reason ([`choose`] is the rule, a pure function of
//! the probed facts; [`probe`] gathers them). `cargo offload doctor` prints
//! the same verdicts.
//!
//! The device pass runs with `RUSTC_BOOTSTRAP=1`, so a stable release works;
//! the host pass uses whatever `cargo` ran `cargo offload`. `ptxas` is
//! optional (without it the image holds PTX only).

use std::path::{Path, PathBuf};
use std::process::Command;

use offload_linker::{LlvmTools, ToolError};

use crate::child;
use crate::errors::{CliError, Result};

/// A device compiler and what comes with it.
#[derive(Debug, Clone)]
pub struct DeviceToolchain {
    pub rustc: PathBuf,
    pub cargo: PathBuf,
    pub sysroot: PathBuf,
    /// `rustc -V`.
    pub version: String,
    pub llvm_major: u32,
    pub llvm: LlvmTools,
    pub ptxas: Option<PathBuf>,
    /// Which candidate was used (`OFFLOAD_RUSTC`, `rustup nightly`, `/usr/bin/rustc`).
    pub origin: String,
}

impl DeviceToolchain {
    /// `rustc 1.101.0-nightly (…) from rustup nightly, LLVM 23`: which
    /// toolchain a build uses, for status lines.
    pub fn describe(&self) -> String {
        format!("{} from {}, LLVM {}", self.version, self.origin, self.llvm_major)
    }

    /// The `-v` status line: `<rustc> (<origin>, <version>), LLVM <major>
    /// tools <dir>, ptxas <path>`.
    pub fn summary(&self) -> String {
        format!(
            "{} ({}, {}), LLVM {} tools {}, ptxas {}",
            self.rustc.display(),
            self.origin,
            self.version,
            self.llvm_major,
            self.llvm.llc.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default(),
            self.ptxas.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "not found (PTX only)".into()),
        )
    }
}

/// Output of `rustc -vV`, the parts we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustcInfo {
    pub version: String,
    pub llvm_major: u32,
}

/// `rustc -vV`, probed (`child::probe`); `None` if it does not run or says
/// nothing readable.
pub fn rustc_info(rustc: &Path) -> Result<Option<RustcInfo>> {
    let read = |out: Option<std::process::Output>| {
        out.filter(|o| o.status.success()).and_then(|o| parse_rustc_vv(&String::from_utf8_lossy(&o.stdout)))
    };
    if let Some(info) = read(child::probe_cached(rustc, &["-vV"])?) {
        return Ok(Some(info));
    }
    // A kept answer that does not read (a damaged cache file) is not the
    // rustc's: ask the rustc itself.
    offload_image::probe::forget(rustc, &["-vV"]);
    Ok(read(child::probe_cached(rustc, &["-vV"])?))
}

/// Parses `rustc -vV`: the first line and the `LLVM version:` major.
pub fn parse_rustc_vv(text: &str) -> Option<RustcInfo> {
    let version = text.lines().next()?.to_string();
    let llvm_major = text
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.trim().parse().ok())?;
    Some(RustcInfo { version, llvm_major })
}

/// `rustc --print sysroot`, probed.
pub fn sysroot(rustc: &Path) -> Result<Option<PathBuf>> {
    let out = child::probe_cached(rustc, &["--print", "sysroot"])?;
    Ok(out.filter(|o| o.status.success()).map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())))
}

/// `<sysroot>/lib/rustlib/src/rust/library`, if it holds `core`.
pub fn rust_src(sysroot: &Path) -> Option<PathBuf> {
    let lib = sysroot.join("lib/rustlib/src/rust/library");
    lib.join("core/src/lib.rs").is_file().then_some(lib)
}

/// `rustup which --toolchain nightly <tool>`, probed.
fn rustup_nightly(tool: &str) -> Result<Option<PathBuf>> {
    let out = child::probe(Command::new("rustup").args(["which", "--toolchain", "nightly", tool]))?;
    Ok(out.filter(|o| o.status.success()).map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())))
}

/// A device rustc and the cargo of the same release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub origin: String,
    pub rustc: PathBuf,
    pub cargo: PathBuf,
}

/// The candidates, in order (see the module docs).
pub fn candidates() -> Result<Vec<Candidate>> {
    let mut c = Vec::new();
    if let Some(r) = std::env::var_os("OFFLOAD_RUSTC").filter(|v| !v.is_empty()) {
        let rustc = PathBuf::from(r);
        let cargo = std::env::var_os("OFFLOAD_CARGO")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| rustc.with_file_name("cargo"));
        c.push(Candidate { origin: "OFFLOAD_RUSTC".into(), rustc, cargo });
        return Ok(c);
    }
    if let (Some(rustc), Some(cargo)) = (rustup_nightly("rustc")?, rustup_nightly("cargo")?) {
        c.push(Candidate { origin: "rustup nightly".into(), rustc, cargo });
    }
    c.push(Candidate {
        origin: "/usr/bin/rustc".into(),
        rustc: "/usr/bin/rustc".into(),
        cargo: "/usr/bin/cargo".into(),
    });
    Ok(c)
}

/// What probing one candidate found, in the order of the checks; a check
/// after a failed one is not made (`None`).
#[derive(Debug, Clone)]
pub struct Probe {
    pub cand: Candidate,
    /// `rustc -vV`, if rustc runs and reports its LLVM version.
    pub info: Option<RustcInfo>,
    /// `rustc --print sysroot`.
    pub sysroot: Option<PathBuf>,
    /// Whether the sysroot holds rust-src.
    pub rust_src: bool,
    /// Whether the candidate's cargo exists.
    pub cargo: bool,
    /// LLVM tools of the rustc's LLVM major version.
    pub llvm: Option<std::result::Result<LlvmTools, ToolError>>,
}

/// Why a candidate is not complete, in the order of the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// `rustc -vV` fails or reports no LLVM version.
    DoesNotRun,
    NoSysroot,
    NoRustSrc,
    NoCargo(PathBuf),
    /// No LLVM tools of rustc's LLVM major version (or one of another version given).
    NoLlvmTools(ToolError),
}

impl Gap {
    /// How far the candidate got (higher: more complete), to pick which
    /// candidate's error to report when none is complete.
    fn stage(&self) -> u8 {
        match self {
            Gap::DoesNotRun => 0,
            Gap::NoSysroot => 1,
            Gap::NoRustSrc => 2,
            Gap::NoCargo(_) => 3,
            Gap::NoLlvmTools(_) => 4,
        }
    }

    /// The reason in a few words, with the fix.
    pub fn reason(&self, cand: &Candidate, llvm_major: Option<u32>) -> String {
        let rustup = cand.origin == "rustup nightly";
        match self {
            Gap::DoesNotRun => "its rustc does not run (or reports no LLVM version)".into(),
            Gap::NoSysroot => "its rustc prints no sysroot".into(),
            Gap::NoRustSrc if rustup => {
                "it has no rust-src (`rustup component add rust-src --toolchain nightly`)".into()
            }
            Gap::NoRustSrc => "it has no rust-src (Debian/Ubuntu: `apt-get install rust-web-src`)".into(),
            Gap::NoCargo(c) => format!("no cargo at {}", c.display()),
            Gap::NoLlvmTools(ToolError::WrongVersion { path, found, major, .. }) => {
                format!("{} is LLVM {found}, not LLVM {major}", path.display())
            }
            Gap::NoLlvmTools(e) => {
                let major = match e {
                    ToolError::Missing { major, .. } => Some(*major),
                    _ => llvm_major,
                };
                let tool = match e {
                    ToolError::Missing { tool, .. } => tool.as_str(),
                    _ => "LLVM tools",
                };
                let m = major.map(|m| m.to_string()).unwrap_or_else(|| "?".into());
                let fix = if rustup {
                    "`rustup component add llvm-tools --toolchain nightly`".to_string()
                } else {
                    format!("Debian/Ubuntu: `apt-get install llvm-{m} lld-{m}`")
                };
                format!("no `{tool}` from LLVM {m}, its LLVM version ({fix})")
            }
        }
    }
}

/// The verdict on one probed candidate: complete, or its first gap.
pub fn verdict(p: &Probe) -> std::result::Result<(), Gap> {
    if p.info.is_none() {
        return Err(Gap::DoesNotRun);
    }
    if p.sysroot.is_none() {
        return Err(Gap::NoSysroot);
    }
    if !p.rust_src {
        return Err(Gap::NoRustSrc);
    }
    if !p.cargo {
        return Err(Gap::NoCargo(p.cand.cargo.clone()));
    }
    match &p.llvm {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(Gap::NoLlvmTools(e.clone())),
        None => Err(Gap::NoLlvmTools(ToolError::NoMajor)),
    }
}

/// Probes one candidate, stopping at the first missing part; an error if
/// a probe does not answer or the build is interrupted.
pub fn probe(cand: Candidate) -> Result<Probe> {
    let mut p = Probe { cand, info: None, sysroot: None, rust_src: false, cargo: false, llvm: None };
    p.info = rustc_info(&p.cand.rustc)?;
    let Some(info) = &p.info else { return Ok(p) };
    p.sysroot = sysroot(&p.cand.rustc)?;
    let Some(root) = &p.sysroot else { return Ok(p) };
    p.rust_src = rust_src(root).is_some();
    if !p.rust_src {
        return Ok(p);
    }
    p.cargo = p.cand.cargo.is_file();
    if !p.cargo {
        return Ok(p);
    }
    p.llvm = Some(LlvmTools::discover(info.llvm_major, Some(root)));
    Ok(p)
}

/// Probes the candidates in order until [`choose`] has its answer (it
/// stops at the first complete one); the first probe error ends it.
pub fn probe_and_choose(candidates: Vec<Candidate>) -> Result<Choice> {
    let mut error = None;
    let probes = candidates.into_iter().map_while(|c| probe(c).map_err(|e| error = Some(e)).ok());
    let choice = choose(probes);
    match error {
        Some(e) => Err(e),
        None => Ok(choice),
    }
}

/// The outcome of [`choose`].
#[derive(Debug)]
pub struct Choice {
    /// The first complete candidate.
    pub chosen: Option<Probe>,
    /// The candidates before it (all of them if none is complete), each
    /// with its gap.
    pub skipped: Vec<(Probe, Gap)>,
}

impl Choice {
    /// One line per skipped candidate: `rustup nightly (/…/rustc, rustc
    /// 1.101.0-nightly …) skipped: <reason>`.
    pub fn skip_lines(&self) -> Vec<String> {
        self.skipped.iter().map(|(p, gap)| skip_line(p, gap)).collect()
    }
}

/// `rustup nightly (/…/rustc, rustc 1.101.0-nightly (…)) skipped: <reason>`.
pub fn skip_line(p: &Probe, gap: &Gap) -> String {
    let version = p.info.as_ref().map(|i| format!(", {}", i.version)).unwrap_or_default();
    format!(
        "device toolchain {} ({}{version}) skipped: {}",
        p.cand.origin,
        p.cand.rustc.display(),
        gap.reason(&p.cand, p.info.as_ref().map(|i| i.llvm_major))
    )
}

/// The rule: the first complete candidate; the ones before it are skipped
/// with their gaps. Lazy: candidates after the chosen one are not probed.
pub fn choose(probes: impl IntoIterator<Item = Probe>) -> Choice {
    let mut skipped = Vec::new();
    for p in probes {
        match verdict(&p) {
            Ok(()) => return Choice { chosen: Some(p), skipped },
            Err(gap) => skipped.push((p, gap)),
        }
    }
    Choice { chosen: None, skipped }
}

const INSTALL_HINT: &str = "install a device toolchain, either with rustup: `rustup toolchain install nightly --component rust-src,llvm-tools`, or on Debian/Ubuntu: `apt-get install rustc-web cargo-web rust-web-src llvm-22 lld-22`; or set OFFLOAD_RUSTC to a rustc that has rust-src";

/// The index of the candidate that got furthest (the first of those).
pub fn furthest(skipped: &[(Probe, Gap)]) -> Option<usize> {
    skipped.iter().enumerate().max_by_key(|(i, (_, g))| (g.stage(), std::cmp::Reverse(*i))).map(|(i, _)| i)
}

/// The error when no candidate is complete: that of the candidate that got
/// furthest (the first of those), with the other candidates' gaps as hints.
pub fn no_toolchain_error(skipped: &[(Probe, Gap)]) -> CliError {
    let Some(best) = furthest(skipped) else {
        return CliError::NoDeviceRustc { tried: "no candidate".into(), hint: INSTALL_HINT.into() };
    };
    let others: Vec<String> =
        skipped.iter().enumerate().filter(|(i, _)| *i != best).map(|(_, (p, g))| skip_line(p, g)).collect();
    let (p, gap) = &skipped[best];
    match gap {
        Gap::NoRustSrc => CliError::MissingRustSrc {
            rustc: p.cand.rustc.clone(),
            hint: "rustup: `rustup component add rust-src --toolchain nightly`; Debian/Ubuntu: `apt-get install rust-web-src`"
                .into(),
            others,
        },
        Gap::NoLlvmTools(e) if others.is_empty() => CliError::Tools(e.clone()),
        Gap::NoLlvmTools(e) => CliError::ToolsOf { origin: p.cand.origin.clone(), error: e.clone(), others },
        _ => {
            let tried: Vec<String> = skipped.iter().map(|(p, g)| skip_line(p, g)).collect();
            CliError::NoDeviceRustc { tried: tried.join("; "), hint: INSTALL_HINT.into() }
        }
    }
}

/// Finds the device toolchain: probes the candidates in order, takes the
/// first complete one and prints a `note:` for each one skipped before it.
pub fn find() -> Result<DeviceToolchain> {
    let choice = probe_and_choose(candidates()?)?;
    let lines = choice.skip_lines();
    let Some(p) = choice.chosen else {
        return Err(no_toolchain_error(&choice.skipped));
    };
    for line in lines {
        crate::status::note(format!("{line}; using {}", p.cand.origin));
    }
    let info = p.info.expect("complete");
    Ok(DeviceToolchain {
        rustc: p.cand.rustc,
        cargo: p.cand.cargo,
        sysroot: p.sysroot.expect("complete"),
        version: info.version,
        llvm_major: info.llvm_major,
        llvm: p.llvm.expect("complete").expect("complete"),
        ptxas: find_ptxas()?,
        origin: p.cand.origin,
    })
}

/// Finds `ptxas`: `OFFLOAD_PTXAS` (empty: none), `ptxas` on `PATH`,
/// `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, and the `nvidia-cuda-nvcc` wheel
/// from PyPI (`site-packages/nvidia/cu*/bin/ptxas`).
pub fn find_ptxas() -> Result<Option<PathBuf>> {
    if let Some(v) = std::env::var_os("OFFLOAD_PTXAS") {
        return Ok(if v.is_empty() { None } else { Some(PathBuf::from(v)) });
    }
    let mut c: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        c.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(var) {
            c.push(PathBuf::from(h).join("bin/ptxas"));
        }
    }
    c.push("/usr/local/cuda/bin/ptxas".into());
    for site in python_site_dirs()? {
        if let Ok(rd) = std::fs::read_dir(site.join("nvidia")) {
            let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            dirs.sort();
            dirs.reverse();
            for d in dirs {
                c.push(d.join("bin/ptxas"));
            }
            c.push(site.join("nvidia/cuda_nvcc/bin/ptxas"));
        }
    }
    Ok(c.into_iter().find(|p| p.is_file()))
}

/// Python's site-packages directories (where pip puts the CUDA wheels).
fn python_site_dirs() -> Result<Vec<PathBuf>> {
    let script = "import site,sys\nprint('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]))";
    for py in ["python3", "python"] {
        if let Some(out) = child::probe(Command::new(py).args(["-c", script]))?.filter(|o| o.status.success()) {
            return Ok(String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect());
        }
    }
    Ok(Vec::new())
}

/// The GPU's architecture as `nvidia-smi` reports it, if there is one.
pub fn detect_gpu_arch() -> Result<Option<String>> {
    let out = child::probe(Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]))?;
    Ok(out.filter(|o| o.status.success()).and_then(|o| parse_compute_cap(&String::from_utf8_lossy(&o.stdout))))
}

/// `9.0` (`nvidia-smi --query-gpu=compute_cap`'s first line) → `sm_90`.
fn parse_compute_cap(text: &str) -> Option<String> {
    let cap = text.lines().next()?.trim();
    let (major, minor) = cap.split_once('.')?;
    Some(format!("sm_{}{}", major.trim(), minor.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(major: u32) -> LlvmTools {
        LlvmTools { major, llvm_link: "llvm-link".into(), opt: "opt".into(), llc: "llc".into(), lld: None }
    }

    /// A probed candidate: `origin`, LLVM `major`, and how far it got
    /// (0 = rustc does not run … 5 = complete).
    fn fake(origin: &str, major: u32, stage: u8) -> Probe {
        let rustc = PathBuf::from(format!("/{origin}/rustc"));
        let cand = Candidate { origin: origin.into(), cargo: rustc.with_file_name("cargo"), rustc };
        let version = format!("rustc 1.{} (fake)", 70 + major);
        Probe {
            cand,
            info: (stage >= 1).then_some(RustcInfo { version, llvm_major: major }),
            sysroot: (stage >= 2).then(|| PathBuf::from(format!("/{origin}"))),
            rust_src: stage >= 3,
            cargo: stage >= 4,
            llvm: (stage >= 4).then(|| {
                if stage >= 5 {
                    Ok(tools(major))
                } else {
                    Err(ToolError::Missing { tool: "llvm-link".into(), major, searched: "…".into() })
                }
            }),
        }
    }

    #[test]
    fn first_complete_candidate_wins_and_the_skipped_are_named() {
        // The case: rustup nightly with rust-src but no LLVM 23
        // tools, before a complete Debian toolchain.
        let c = choose([fake("rustup nightly", 23, 4), fake("/usr/bin/rustc", 22, 5)]);
        let chosen = c.chosen.as_ref().expect("Debian's is complete");
        assert_eq!(chosen.cand.origin, "/usr/bin/rustc");
        assert_eq!(c.skipped.len(), 1);
        assert!(matches!(c.skipped[0].1, Gap::NoLlvmTools(ToolError::Missing { major: 23, .. })));
        let lines = c.skip_lines();
        assert_eq!(
            lines,
            ["device toolchain rustup nightly (/rustup nightly/rustc, rustc 1.93 (fake)) skipped: no `llvm-link` from LLVM 23, \
              its LLVM version (`rustup component add llvm-tools --toolchain nightly`)"]
        );
        // A complete first candidate: nothing skipped, later ones not probed.
        let mut probed = 0;
        let c =
            choose([fake("rustup nightly", 23, 5), fake("/usr/bin/rustc", 22, 5)].into_iter().inspect(|_| probed += 1));
        assert_eq!(c.chosen.unwrap().cand.origin, "rustup nightly");
        assert!(c.skipped.is_empty());
        assert_eq!(probed, 1);
    }

    #[test]
    fn every_gap_is_a_reason_to_skip() {
        for (stage, want) in [
            (0, "its rustc does not run"),
            (1, "its rustc prints no sysroot"),
            (2, "it has no rust-src (`rustup component add rust-src --toolchain nightly`)"),
            (3, "no cargo at /rustup nightly/cargo"),
            (4, "no `llvm-link` from LLVM 23"),
        ] {
            let c = choose([fake("rustup nightly", 23, stage), fake("/usr/bin/rustc", 22, 5)]);
            assert_eq!(c.chosen.as_ref().map(|p| p.cand.origin.as_str()), Some("/usr/bin/rustc"), "stage {stage}");
            assert!(c.skip_lines()[0].contains(want), "stage {stage}: {:?}", c.skip_lines());
        }
        // Debian's fixes are Debian's.
        let c = choose([fake("/usr/bin/rustc", 22, 2)]);
        assert!(c.skip_lines()[0].contains("apt-get install rust-web-src"), "{:?}", c.skip_lines());
        let c = choose([fake("/usr/bin/rustc", 22, 4)]);
        assert!(c.skip_lines()[0].contains("apt-get install llvm-22 lld-22"), "{:?}", c.skip_lines());
    }

    #[test]
    fn with_none_complete_the_furthest_candidate_is_reported() {
        // Nightly lacks LLVM tools, Debian lacks rust-src: the tools are
        // what is missing, and Debian's gap is a note.
        let c = choose([fake("/usr/bin/rustc", 22, 2), fake("rustup nightly", 23, 4)]);
        assert!(c.chosen.is_none());
        let e = no_toolchain_error(&c.skipped);
        assert!(matches!(&e, CliError::ToolsOf { origin, .. } if origin == "rustup nightly"), "{e:?}");
        assert!(e.to_string().starts_with("device toolchain rustup nightly: no `llvm-link` from LLVM 23 found"), "{e}");
        assert_eq!(e.notes().len(), 1);
        assert!(e.notes()[0].contains("/usr/bin/rustc") && e.notes()[0].contains("no rust-src"), "{:?}", e.notes());
        assert_eq!(e.exit_code(), crate::errors::exit::SETUP);
        // One candidate without rust-src (OFFLOAD_RUSTC): that error, with
        // both ways to install the sources.
        let e = no_toolchain_error(&choose([fake("OFFLOAD_RUSTC", 22, 2)]).skipped);
        assert!(matches!(&e, CliError::MissingRustSrc { others, .. } if others.is_empty()), "{e:?}");
        let text = e.render("error: ");
        assert!(text.starts_with("error: `/OFFLOAD_RUSTC/rustc` has no library sources (rust-src)"), "{text}");
        for fix in ["rustup component add rust-src --toolchain nightly", "apt-get install rust-web-src"] {
            assert!(text.contains(fix), "{fix}: {text}");
        }
        assert_eq!(e.exit_code(), crate::errors::exit::SETUP);
        // One candidate without LLVM tools: both ways to install them.
        let e = no_toolchain_error(&choose([fake("/usr/bin/rustc", 22, 4)]).skipped);
        let text = e.render("error: ");
        assert!(text.starts_with("error: no `llvm-link` from LLVM 22 found"), "{text}");
        for fix in ["apt-get install llvm-22 lld-22", "rustup component add llvm-tools --toolchain nightly"] {
            assert!(text.contains(fix), "{fix}: {text}");
        }
        assert_eq!(e.exit_code(), crate::errors::exit::SETUP);
        // A tie goes to the first; nothing runs: every candidate is listed.
        let e = no_toolchain_error(&choose([fake("a", 22, 0), fake("b", 22, 0)]).skipped);
        assert!(e.to_string().contains("device toolchain a (/a/rustc) skipped: its rustc does not run"), "{e}");
        assert!(e.to_string().contains("device toolchain b (/b/rustc) skipped"), "{e}");
    }

    #[test]
    fn rustc_version_output() {
        let i = parse_rustc_vv("rustc 1.101.0-nightly (92b5b8c87 2026-10-29)\nbinary: rustc\nLLVM version: 23.1.4\n")
            .unwrap();
        assert_eq!(i, RustcInfo { version: "rustc 1.101.0-nightly (92b5b8c87 2026-10-29)".into(), llvm_major: 23 });
        assert_eq!(parse_rustc_vv("rustc 1.96.0\nbinary: rustc\n"), None);
    }
}
