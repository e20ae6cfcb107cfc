//! `cargo offload doctor`: what was found, what is missing, and the exact
//! command that installs each missing part (Debian/Ubuntu and rustup).

use std::path::{Path, PathBuf};
use std::process::Command;

use offload_linker::tools::{find_tool, tool_major};

use crate::toolchain;

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

fn first_line(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(String::from)
}

/// The `release X.Y` line of `ptxas --version`.
fn release_line(program: &Path) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().map(str::trim).find(|l| l.contains("release")).map(String::from)
}

/// libdevice (`libdevice.10.bc`): CUDA toolkit or PyPI's `nvidia-nvvm` /
/// `nvidia-cuda-nvcc` wheels.
pub fn find_libdevice() -> Option<PathBuf> {
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
    if let Some(ptxas) = toolchain::find_ptxas() {
        // wheel layout: nvidia/cu13/bin/ptxas beside nvidia/cu13/nvvm/libdevice
        if let Some(root) = ptxas.parent().and_then(Path::parent) {
            dirs.push(root.join("nvvm/libdevice"));
        }
    }
    dirs.into_iter().map(|d| d.join("libdevice.10.bc")).find(|p| p.is_file())
}

fn gpus() -> Result<Vec<String>, String> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=name,compute_cap,memory.total,driver_version", "--format=csv,noheader"])
        .output()
        .map_err(|_| "no NVIDIA driver (nvidia-smi not found)".to_string())?;
    if !out.status.success() {
        return Err(format!("nvidia-smi failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            match f.as_slice() {
                [name, cap, mem, drv] => format!("{name}, sm_{}, {mem}, driver {drv}", cap.replace('.', "")),
                _ => l.to_string(),
            }
        })
        .collect())
}

/// Prints the report; returns the exit code (0 if the device toolchain is
/// complete, 3 otherwise).
pub fn run() -> i32 {
    let mut items = Vec::new();

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    items.push(Item {
        what: "host cargo".into(),
        found: first_line(Path::new(&cargo), &["-V"]),
        fix: vec!["install Rust: https://rustup.rs".into()],
        required: true,
        tag: None,
    });
    let host_rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    items.push(Item {
        what: "host rustc".into(),
        found: toolchain::rustc_info(Path::new(&host_rustc)).map(|i| format!("{} (LLVM {})", i.version, i.llvm_major)),
        fix: vec!["install Rust: https://rustup.rs".into()],
        required: true,
        tag: None,
    });

    // Every candidate, probed in full, with the verdict `cargo offload`
    // reaches (toolchain::choose): the first complete one is used.
    let probes: Vec<toolchain::Probe> = toolchain::candidates().into_iter().map(toolchain::probe).collect();
    let choice = toolchain::choose(probes.clone());
    let chosen_at = choice.chosen.as_ref().map(|_| choice.skipped.len());
    for (i, p) in probes.iter().enumerate() {
        let what = format!("device toolchain: {}", p.cand.origin);
        let version = p.info.as_ref().map(|v| format!("{}, LLVM {}", v.version, v.llvm_major)).unwrap_or_default();
        let (tag, text) = match (toolchain::verdict(p), chosen_at) {
            (Ok(()), Some(c)) if c == i => ("used", format!("{} ({version})", p.cand.rustc.display())),
            (Ok(()), _) => (
                "unused",
                format!("{} ({version}): complete, but an earlier candidate is used", p.cand.rustc.display()),
            ),
            (Err(gap), Some(c)) if i > c => ("unusable", toolchain::skip_line(p, &gap)),
            (Err(gap), _) => ("skipped", toolchain::skip_line(p, &gap)),
        };
        items.push(Item { what, found: Some(text), fix: vec![], required: false, tag: Some(tag) });
    }
    // The parts of the chosen candidate, or of the one that got furthest.
    let shown =
        choice.chosen.clone().or_else(|| toolchain::furthest(&choice.skipped).map(|i| choice.skipped[i].0.clone()));
    if choice.chosen.is_none() {
        let e = toolchain::no_toolchain_error(&choice.skipped);
        items.push(Item {
            what: "complete device toolchain".into(),
            found: None,
            fix: vec![
                format!("({e})"),
                "Debian/Ubuntu: sudo apt-get install rustc-web cargo-web rust-web-src llvm-22 lld-22".into(),
                "rustup: rustup toolchain install nightly --component rust-src,llvm-tools".into(),
            ],
            required: true,
            tag: None,
        });
    }
    let major = match &shown {
        Some(p) => {
            if let Some(info) = &p.info {
                items.push(Item {
                    what: "device rustc".into(),
                    found: Some(format!(
                        "{} ({}, LLVM {}, from {})",
                        p.cand.rustc.display(),
                        info.version,
                        info.llvm_major,
                        p.cand.origin
                    )),
                    fix: vec![],
                    required: true,
                    tag: None,
                });
            }
            items.push(Item {
                what: "rust-src".into(),
                found: p.sysroot.as_deref().and_then(toolchain::rust_src).map(|p| p.display().to_string()),
                fix: vec![
                    "rustup: rustup component add rust-src --toolchain nightly".into(),
                    "Debian/Ubuntu: sudo apt-get install rust-web-src".into(),
                ],
                required: true,
                tag: None,
            });
            items.push(Item {
                what: "device cargo".into(),
                found: first_line(&p.cand.cargo, &["-V"]).map(|v| format!("{} ({v})", p.cand.cargo.display())),
                fix: vec![format!("no cargo at {}; set OFFLOAD_CARGO", p.cand.cargo.display())],
                required: true,
                tag: None,
            });
            p.info.as_ref().map(|i| (i.llvm_major, p.sysroot.clone()))
        }
        None => None,
    };

    let (llvm, sysroot) = match &major {
        Some((m, s)) => (*m, s.as_deref()),
        None => (22, None),
    };
    for (tool, env, required) in
        [("llvm-link", "OFFLOAD_LLVM_LINK", true), ("opt", "OFFLOAD_OPT", true), ("llc", "OFFLOAD_LLC", true), ("ld.lld", "OFFLOAD_LLD", false)]
    {
        let extra: &[&str] = if tool == "ld.lld" { &["rust-lld"] } else { &[] };
        let found = find_tool(tool, env, llvm, sysroot, extra)
            .ok()
            .map(|p| format!("{} (LLVM {})", p.display(), tool_major(&p).unwrap_or(llvm)));
        items.push(Item {
            what: format!("{tool} (LLVM {llvm}){}", if required { "" } else { ", AMD GPU images only" }),
            found,
            fix: vec![
                format!("Debian/Ubuntu: sudo apt-get install llvm-{llvm} lld-{llvm}"),
                "rustup: rustup component add llvm-tools --toolchain nightly".into(),
            ],
            required,
            tag: None,
        });
    }

    let ptxas = toolchain::find_ptxas();
    items.push(Item {
        what: "ptxas (cubins, PTX checks)".into(),
        found: ptxas.as_ref().map(|p| format!("{} ({})", p.display(), release_line(p).unwrap_or_default())),
        fix: vec![
            "any OS: python3 -m pip install nvidia-cuda-nvcc".into(),
            "or the CUDA toolkit (https://developer.nvidia.com/cuda-downloads)".into(),
        ],
        required: false,
        tag: None,
    });
    items.push(Item {
        what: "libdevice (fast device math)".into(),
        found: find_libdevice().map(|p| p.display().to_string()),
        fix: vec!["any OS: python3 -m pip install nvidia-nvvm".into()],
        required: false,
        tag: None,
    });
    match gpus() {
        Ok(g) if !g.is_empty() => {
            for (i, desc) in g.iter().enumerate() {
                let found = Some(desc.clone());
                items.push(Item { what: format!("GPU {i}"), found, fix: vec![], required: false, tag: None });
            }
        }
        Ok(_) => items.push(Item {
            what: "GPU".into(),
            found: None,
            fix: vec!["the driver reports no GPU: kernels run on the host CPU".into()],
            required: false,
            tag: None,
        }),
        Err(why) => items.push(Item {
            what: "NVIDIA driver / GPU".into(),
            found: None,
            fix: vec![format!("{why}: kernels run on the host CPU; install the NVIDIA driver to use a GPU")],
            required: false,
            tag: None,
        }),
    }

    let mut complete = true;
    for it in &items {
        match &it.found {
            Some(f) => println!("  {:<8} {:<44} {f}", it.tag.unwrap_or("ok"), it.what),
            None => {
                if it.required {
                    complete = false;
                }
                println!("  {:<8} {:<44} not found", if it.required { "MISSING" } else { "missing" }, it.what);
                for fix in &it.fix {
                    println!("           {:<44} {fix}", "");
                }
            }
        }
    }
    if complete {
        println!("\nThe device toolchain is complete: `cargo offload build` can build device images.");
        0
    } else {
        println!("\nThe device toolchain is incomplete: install the parts marked MISSING (or run ./setup.sh).");
        crate::errors::exit::SETUP
    }
}
