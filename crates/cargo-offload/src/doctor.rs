//! `cargo offload doctor`: what was found, what is missing, and the exact
//! command that installs each missing part (Debian/Ubuntu and rustup).
//!
//! One line per part: a status column, what it is, what was found (or `not
//! found`, with the fixes below it). Each device toolchain candidate gets
//! one line with the verdict `cargo offload` reaches on it
//! (`toolchain::choose`): `used`, `unused` (complete, but an earlier one is
//! used), `skipped` (incomplete, before the one used) or `unusable`
//! (incomplete, after it), its rustc and version, and for an incomplete one
//! the reason with its fix, once.

use std::path::{Path, PathBuf};
use std::process::Command;

use offload_linker::tools::{find_tool, tool_major};

use crate::errors::Result;
use crate::toolchain::{self, Gap, Probe};
use crate::{child, errors};

/// One line of the report.
struct Item {
    what: String,
    found: Option<String>,
    /// How to get it, when missing.
    fix: Vec<String>,
    required: bool,
    /// The status column when found (default `ok`).
    tag: Option<&'static str>,
}

impl Item {
    /// A part that is needed (`required`) or optional, found or not.
    fn part(what: impl Into<String>, found: Option<String>, fix: Vec<String>, required: bool) -> Item {
        Item { what: what.into(), found, fix, required, tag: None }
    }
}

/// The first non-empty line `program args…` prints (stdout, then stderr).
fn first_line(program: &Path, args: &[&str]) -> Result<Option<String>> {
    let Some(out) = child::probe_cached(program, args)? else { return Ok(None) };
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok(text.lines().map(str::trim).find(|l| !l.is_empty()).map(String::from))
}

/// The `release X.Y` line of `ptxas --version`.
fn release_line(program: &Path) -> Result<Option<String>> {
    let Some(out) = child::probe_cached(program, &["--version"])? else { return Ok(None) };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok(text.lines().map(str::trim).find(|l| l.contains("release")).map(String::from))
}

/// libdevice (`libdevice.10.bc`): CUDA toolkit or PyPI's `nvidia-nvvm` /
/// `nvidia-cuda-nvcc` wheels.
pub fn find_libdevice(ptxas: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OFFLOAD_LIBDEVICE").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(var) {
            dirs.push(PathBuf::from(h).join("nvvm/libdevice"));
        }
    }
    dirs.push("/usr/local/cuda/nvvm/libdevice".into());
    // wheel layout: nvidia/cu13/bin/ptxas beside nvidia/cu13/nvvm/libdevice
    if let Some(root) = ptxas.and_then(Path::parent).and_then(Path::parent) {
        dirs.push(root.join("nvvm/libdevice"));
    }
    dirs.into_iter().map(|d| d.join("libdevice.10.bc")).find(|p| p.is_file())
}

/// `nvidia-smi`'s GPUs, one description each, or why there are none.
fn gpus() -> Result<std::result::Result<Vec<String>, String>> {
    let mut cmd = Command::new("nvidia-smi");
    cmd.args(["--query-gpu=name,compute_cap,memory.total,driver_version", "--format=csv,noheader"]);
    let Some(out) = child::probe(&mut cmd)? else {
        return Ok(Err("no NVIDIA driver (nvidia-smi not found)".into()));
    };
    if !out.status.success() {
        return Ok(Err(format!("nvidia-smi failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            match f.as_slice() {
                [name, cap, mem, drv] => format!("{name}, sm_{}, {mem}, driver {drv}", cap.replace('.', "")),
                _ => l.to_string(),
            }
        })
        .collect()))
}

/// The host's cargo and rustc.
fn host_items() -> Result<Vec<Item>> {
    let rustup = || vec!["install Rust: https://rustup.rs".to_string()];
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host_rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc =
        toolchain::rustc_info(Path::new(&host_rustc))?.map(|i| format!("{} (LLVM {})", i.version, i.llvm_major));
    Ok(vec![
        Item::part("host cargo", first_line(Path::new(&cargo), &["-V"])?, rustup(), true),
        Item::part("host rustc", rustc, rustup(), true),
    ])
}

/// The status column and the text of a device toolchain candidate's line
/// (see the module docs): `<rustc> (<version>, LLVM <major>)`, then for an
/// incomplete one `: <reason>`.
fn candidate_line(
    p: &Probe,
    verdict: std::result::Result<(), Gap>,
    used: bool,
    after_used: bool,
) -> (&'static str, String) {
    let version = p.info.as_ref().map(|v| format!(" ({}, LLVM {})", v.version, v.llvm_major)).unwrap_or_default();
    let rustc = format!("{}{version}", p.cand.rustc.display());
    match verdict {
        Ok(()) if used => ("used", rustc),
        Ok(()) => ("unused", format!("{rustc}: complete, but an earlier candidate is used")),
        Err(gap) => {
            let reason = gap.reason(&p.cand, p.info.as_ref().map(|i| i.llvm_major));
            (if after_used { "unusable" } else { "skipped" }, format!("{rustc}: {reason}"))
        }
    }
}

/// One line per device toolchain candidate, probed in full, and the parts
/// of the one used (or of the one that got furthest); returns the LLVM
/// major version and sysroot of that one.
fn toolchain_items(items: &mut Vec<Item>) -> Result<Option<(u32, Option<PathBuf>)>> {
    let probes: Vec<Probe> = toolchain::candidates()?.into_iter().map(toolchain::probe).collect::<Result<_>>()?;
    let choice = toolchain::choose(probes.clone());
    let chosen_at = choice.chosen.as_ref().map(|_| choice.skipped.len());
    for (i, p) in probes.iter().enumerate() {
        let (tag, text) =
            candidate_line(p, toolchain::verdict(p), chosen_at == Some(i), chosen_at.is_some_and(|c| i > c));
        let what = format!("device toolchain: {}", p.cand.origin);
        items.push(Item { what, found: Some(text), fix: vec![], required: false, tag: Some(tag) });
    }
    if choice.chosen.is_none() {
        // Why each candidate falls short is on its own line above.
        items.push(Item::part(
            "complete device toolchain",
            None,
            vec![
                "Debian/Ubuntu: sudo apt-get install rustc-web cargo-web rust-web-src llvm-22 lld-22".into(),
                "rustup: rustup toolchain install nightly --component rust-src,llvm-tools".into(),
            ],
            true,
        ));
    }
    let shown =
        choice.chosen.clone().or_else(|| toolchain::furthest(&choice.skipped).map(|i| choice.skipped[i].0.clone()));
    let Some(p) = shown else { return Ok(None) };
    if let Some(info) = &p.info {
        let rustc =
            format!("{} ({}, LLVM {}, from {})", p.cand.rustc.display(), info.version, info.llvm_major, p.cand.origin);
        items.push(Item::part("device rustc", Some(rustc), vec![], true));
    }
    items.push(Item::part(
        "rust-src",
        p.sysroot.as_deref().and_then(toolchain::rust_src).map(|p| p.display().to_string()),
        vec![
            "rustup: rustup component add rust-src --toolchain nightly".into(),
            "Debian/Ubuntu: sudo apt-get install rust-web-src".into(),
        ],
        true,
    ));
    let cargo = first_line(&p.cand.cargo, &["-V"])?.map(|v| format!("{} ({v})", p.cand.cargo.display()));
    items.push(Item::part(
        "device cargo",
        cargo,
        vec![format!("no cargo at {}; set OFFLOAD_CARGO", p.cand.cargo.display())],
        true,
    ));
    Ok(p.info.as_ref().map(|i| (i.llvm_major, p.sysroot.clone())))
}

/// The LLVM tools of major version `llvm`.
fn llvm_items(llvm: u32, sysroot: Option<&Path>) -> Vec<Item> {
    let tools = [
        ("llvm-link", "OFFLOAD_LLVM_LINK", true),
        ("opt", "OFFLOAD_OPT", true),
        ("llc", "OFFLOAD_LLC", true),
        ("ld.lld", "OFFLOAD_LLD", false),
    ];
    tools
        .into_iter()
        .map(|(tool, env, required)| {
            let extra: &[&str] = if tool == "ld.lld" { &["rust-lld"] } else { &[] };
            let found = find_tool(tool, env, llvm, sysroot, extra)
                .ok()
                .map(|p| format!("{} (LLVM {})", p.display(), tool_major(&p).unwrap_or(llvm)));
            let fix = vec![
                format!("Debian/Ubuntu: sudo apt-get install llvm-{llvm} lld-{llvm}"),
                "rustup: rustup component add llvm-tools --toolchain nightly".into(),
            ];
            let what = format!("{tool} (LLVM {llvm}){}", if required { "" } else { ", AMD GPU images only" });
            Item::part(what, found, fix, required)
        })
        .collect()
}

/// ptxas, libdevice and the GPUs (all optional).
fn cuda_items() -> Result<Vec<Item>> {
    let ptxas = toolchain::find_ptxas()?;
    let ptxas_found = match &ptxas {
        Some(p) => Some(format!("{} ({})", p.display(), release_line(p)?.unwrap_or_default())),
        None => None,
    };
    let mut items = vec![
        Item::part(
            "ptxas (cubins, PTX checks)",
            ptxas_found,
            vec![
                "any OS: python3 -m pip install nvidia-cuda-nvcc".into(),
                "or the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)".into(),
            ],
            false,
        ),
        Item::part(
            "libdevice (fast device math)",
            find_libdevice(ptxas.as_deref()).map(|p| p.display().to_string()),
            vec!["any OS: python3 -m pip install nvidia-nvvm".into()],
            false,
        ),
    ];
    match gpus()? {
        Ok(g) if !g.is_empty() => {
            items.extend(
                g.into_iter().enumerate().map(|(i, desc)| Item::part(format!("GPU {i}"), Some(desc), vec![], false)),
            );
        }
        Ok(_) => items.push(Item::part(
            "GPU",
            None,
            vec!["the driver reports no GPU: kernels run on the host CPU".into()],
            false,
        )),
        Err(why) => items.push(Item::part(
            "NVIDIA driver / GPU",
            None,
            vec![format!("{why}: kernels run on the host CPU; install the NVIDIA driver to use a GPU")],
            false,
        )),
    }
    Ok(items)
}

/// The report's lines; whether every required part was found.
fn render(items: &[Item]) -> (String, bool) {
    let mut out = String::new();
    let mut complete = true;
    for it in items {
        match &it.found {
            Some(f) => out.push_str(&format!("  {:<8} {:<44} {f}\n", it.tag.unwrap_or("ok"), it.what)),
            None => {
                complete &= !it.required;
                let tag = if it.required { "MISSING" } else { "missing" };
                out.push_str(&format!("  {tag:<8} {:<44} not found\n", it.what));
                for fix in &it.fix {
                    out.push_str(&format!("           {:<44} {fix}\n", ""));
                }
            }
        }
    }
    (out, complete)
}

/// Prints the report; returns the exit code (0 if the device toolchain is
/// complete, 3 otherwise).
pub fn run() -> Result<i32> {
    let mut items = host_items()?;
    let (llvm, sysroot) = match toolchain_items(&mut items)? {
        Some((m, s)) => (m, s),
        None => (22, None),
    };
    items.extend(llvm_items(llvm, sysroot.as_deref()));
    items.extend(cuda_items()?);
    let (report, complete) = render(&items);
    print!("{report}");
    if complete {
        println!("\nThe device toolchain is complete: `cargo offload build` can build device images.");
        Ok(errors::exit::OK)
    } else {
        println!("\nThe device toolchain is incomplete: install the parts marked MISSING (or run ./setup.sh).");
        Ok(errors::exit::SETUP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::{Candidate, RustcInfo};

    fn probe(origin: &str, rustc: &str, version: Option<&str>) -> Probe {
        Probe {
            cand: Candidate { origin: origin.into(), rustc: rustc.into(), cargo: "/c/cargo".into() },
            info: version.map(|v| RustcInfo { version: v.into(), llvm_major: 22 }),
            sysroot: None,
            rust_src: false,
            cargo: false,
            llvm: None,
        }
    }

    /// Each candidate is one line: its status, its rustc, and the reason
    /// it is not used once (not the candidate's name again, nor `skipped`
    /// twice).
    #[test]
    fn one_clean_line_per_toolchain() {
        let p = probe("OFFLOAD_RUSTC", "/usr/bin/false", None);
        let (tag, text) = candidate_line(&p, Err(Gap::DoesNotRun), false, false);
        assert_eq!(
            (tag, text.as_str()),
            ("skipped", "/usr/bin/false: its rustc does not run (or reports no LLVM version)")
        );
        let p = probe("/usr/bin/rustc", "/usr/bin/rustc", Some("rustc 1.96.0"));
        let (tag, text) = candidate_line(&p, Err(Gap::NoRustSrc), false, true);
        assert_eq!(
            (tag, text.as_str()),
            ("unusable", "/usr/bin/rustc (rustc 1.96.0, LLVM 22): it has no rust-src (Debian/Ubuntu: `apt-get install rust-web-src`)")
        );
        assert_eq!(candidate_line(&p, Ok(()), true, false), ("used", "/usr/bin/rustc (rustc 1.96.0, LLVM 22)".into()));
        let items = vec![Item {
            what: format!("device toolchain: {}", p.cand.origin),
            found: Some(text),
            fix: vec![],
            required: false,
            tag: Some(tag),
        }];
        let (report, complete) = render(&items);
        assert!(complete);
        assert_eq!(report.lines().count(), 1, "{report}");
        assert_eq!(report.matches("rust-src").count(), 1, "{report}");
        assert_eq!(report.matches("device toolchain").count(), 1, "{report}");
    }
}
