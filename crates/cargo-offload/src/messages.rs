//! What the device pass's cargo says, read as it comes: its JSON records on
//! stdout ([`Reader`]: rustc's diagnostics, shown as the user's
//! `--message-format` asks and marked as the device pass's (`output`); the
//! device images of the final binaries) and its own lines on stderr
//! ([`relay_stderr`]).
//!
//! A few diagnostics change on the way (their meaning is `diagnostic`'s):
//! an interruption ends the build quietly, a failed device link is shown as
//! what offload-linker said, rustc's warning about the PTX feature `cargo
//! offload` itself enables is left out, an error naming a dependency the
//! device pass replaced by an empty crate becomes one error naming it
//! (`host_only`; rustc's `rustc --explain` note for that crate is left
//! out, it names the codes of the errors replaced), and in `check` a
//! diagnostic the host pass already showed is not shown again.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use cargo_metadata::diagnostic::DiagnosticLevel;
use cargo_metadata::{Message, TargetKind};
use serde_json::Value;

use crate::diagnostic::{classify, Meaning};
use crate::output::{key, mark_device, MessageFormat};
use crate::{host_only, status};

mod recount;
pub use recount::{recount, Left};
use recount::{unit_key, Explain};

/// A device image cargo reported for one final binary.
#[derive(Debug, Clone)]
pub struct DeviceArtifact {
    /// Crate name (`-` replaced by `_`), as rustc's `--crate-name`.
    pub crate_name: String,
    /// Target kinds (`bin`, `test`, `example`, `bench`, `lib`, …).
    pub kinds: Vec<String>,
    pub src_path: PathBuf,
    /// Built with the test harness (`cargo test` unit tests).
    pub test: bool,
    /// The `.ptx` (or `.elf`) file.
    pub image: PathBuf,
}

impl DeviceArtifact {
    /// `bin sample_offload`, `test integ (tests/integ.rs)`, …
    pub fn describe(&self) -> String {
        let kind = if self.kinds.iter().any(|k| k == "bench") {
            "bench"
        } else if self.test {
            "test"
        } else {
            self.kinds.first().map(String::as_str).unwrap_or("bin")
        };
        format!("{kind} `{}`", self.crate_name)
    }
}

/// What the device pass's messages said.
#[derive(Default)]
pub struct Seen {
    pub artifacts: Vec<DeviceArtifact>,
    pub std_missing: Vec<StdUser>,
    pub duplicate_symbol: bool,
    /// Error diagnostics shown.
    pub errors: usize,
    /// Error diagnostics the host pass had shown already (`check`).
    pub duplicates: usize,
    /// (target, replaced crate) of each error at a use of a replaced crate
    /// shown: one per crate and target.
    host_only_named: HashSet<(String, String)>,
    /// (target, file, byte range) of the spans of each error at a kernel
    /// calling a kernel: rustc's E0061 at one of them is not shown.
    kernel_calls: Vec<(String, String, (u32, u32))>,
    /// The diagnostics left out of each target ([`unit_key`]): the PTX
    /// feature's warning (`own_feature_warning`), E0061 after a kernel
    /// calling a kernel; cargo's summary lines count them ([`recount`]).
    pub left_out: HashMap<String, Left>,
    /// (target, code) of the errors left out, and of those shown.
    codes_gone: HashSet<(String, String)>,
    codes_shown: HashSet<(String, String)>,
    /// rustc's `--explain` notes of each target, without the codes left out.
    explain: HashMap<String, Explain>,
}

/// Reads one device pass's records (see the module docs).
pub struct Reader<'a> {
    pub format: MessageFormat,
    /// The device triple and architecture: `nvptx64-nvidia-cuda`, `sm_90`.
    pub triple: &'a str,
    pub arch: &'a str,
    /// The PTX feature the pass enables (`+ptx78`).
    pub ptx_feature: Option<&'a str>,
    /// The keys (`output::key`) of the host pass's diagnostics (`check`).
    pub known: &'a HashSet<String>,
    /// Where the wrapper marks the crates it replaced (`host_only`).
    pub host_only_dir: &'a Path,
    /// The graph's library dependencies (`host_only::lib_deps`).
    pub lib_deps: &'a host_only::LibDeps,
    pub seen: Seen,
}

impl Reader<'_> {
    /// Reads cargo's records until it closes its stdout.
    pub fn read(&mut self, stdout: impl std::io::Read) {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let Ok(record) = serde_json::from_str::<Value>(&line) else {
                if !crate::interrupt::interrupted() {
                    eprintln!("{line}");
                }
                continue;
            };
            match serde_json::from_value::<Message>(record.clone()) {
                Ok(Message::CompilerMessage(m)) => self.diagnostic(&m, record),
                Ok(Message::CompilerArtifact(a)) => self.seen.artifacts.extend(artifact(&a)),
                _ => {}
            }
        }
    }

    /// rustc before 1.101 warns for every crate that the PTX feature the
    /// device pass enables (`ptx.rs`) is unstable; it is cargo offload's
    /// own flag, not the user's, so that warning is not shown.
    fn own_feature_warning(&self, meaning: &Meaning) -> bool {
        let own = self.ptx_feature.and_then(|f| f.strip_prefix('+'));
        matches!(meaning, Meaning::UnstableTargetFeature { feature } if Some(feature.as_str()) == own)
    }

    /// Records an error at a kernel calling a kernel; whether `m` is rustc's
    /// E0061 at that call (the launcher's argument count), which follows it.
    /// rustc's E0277 points at the first argument, its label `required by
    /// a bound introduced by this call` at the callee; E0061 at the callee.
    fn follows_kernel_call(&mut self, m: &cargo_metadata::CompilerMessage, meaning: &Meaning) -> bool {
        let target = &m.target.name;
        if *meaning == Meaning::KernelCallsKernel {
            for s in &m.message.spans {
                self.seen.kernel_calls.push((target.clone(), s.file_name.clone(), (s.byte_start, s.byte_end)));
            }
            return false;
        }
        let Some(span) = m.message.spans.iter().find(|s| s.is_primary) else { return false };
        m.message.code.as_ref().is_some_and(|c| c.code == "E0061")
            && self.seen.kernel_calls.iter().any(|(t, file, (start, end))| {
                t == target && *file == span.file_name && span.byte_start < *end && *start < span.byte_end
            })
    }

    /// rustc's `--explain` note `d` of `target` without the codes of the
    /// errors left out there (not shown there otherwise); false: say nothing.
    fn without_codes_gone(&mut self, target: &str, d: &mut Value) -> bool {
        let seen = &mut self.seen;
        if !seen.codes_gone.iter().any(|(t, _)| t == target) {
            return true;
        }
        let gone = |c: &str| {
            let key = (target.to_string(), c.to_string());
            seen.codes_gone.contains(&key) && !seen.codes_shown.contains(&key)
        };
        let message = d.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(text) = seen.explain.entry(target.to_string()).or_default().note(&message, gone) else {
            return false;
        };
        d["rendered"] = Value::String(format!("{text}\n"));
        d["message"] = Value::String(text);
        true
    }

    /// One rustc diagnostic: `m` typed, `record` as cargo wrote it.
    fn diagnostic(&mut self, m: &cargo_metadata::CompilerMessage, mut record: Value) {
        let children: Vec<&str> = m.message.children.iter().map(|c| c.message.as_str()).collect();
        let meaning = classify(&m.message.message, &children);
        if meaning == Meaning::Interrupted {
            crate::interrupt::set();
        }
        if crate::interrupt::interrupted() {
            return;
        }
        if self.own_feature_warning(&meaning) {
            self.seen.left_out.entry(unit_key(&m.target)).or_default().warnings += 1;
            return;
        }
        let error = m.message.level == DiagnosticLevel::Error;
        let explains = m.message.level == DiagnosticLevel::FailureNote && m.message.message.contains("rustc --explain");
        if explains && self.seen.host_only_named.iter().any(|(target, _)| *target == m.target.name) {
            // rustc's codes there include those of the errors rewritten below.
            return;
        }
        if self.follows_kernel_call(m, &meaning) {
            self.seen.left_out.entry(unit_key(&m.target)).or_default().errors += 1;
            self.seen.codes_gone.insert((m.target.name.clone(), "E0061".into()));
            return;
        }
        let d = &mut record["message"];
        if m.message.level == DiagnosticLevel::FailureNote && !self.without_codes_gone(&m.target.name, d) {
            return;
        }
        if self.known.contains(&key(d)) {
            self.seen.duplicates += usize::from(error);
            return;
        }
        if error {
            let markers = host_only::markers(self.host_only_dir);
            if let Some(named) = host_only::named(&m.message.message, &markers, self.lib_deps) {
                if !self.seen.host_only_named.insert((m.target.name.clone(), named.krate().to_string())) {
                    return;
                }
                host_only::rewrite(d, named, self.triple);
            }
        }
        if let Meaning::DeviceLinkFailed { said } = &meaning {
            // What offload-linker said, without rustc's notes with the
            // linker's command line.
            let what = if said.is_empty() { m.message.message.clone() } else { said.join("\n") };
            let text = format!("device link of `{}` failed: {what}", m.target.name);
            let prefix = if self.format.json_diagnostics() { "error: " } else { status::error_prefix() };
            d["rendered"] = Value::String(format!("{prefix}{text}\n"));
            d["message"] = Value::String(text);
            d["children"] = Value::Array(Vec::new());
        }
        if matches!(m.message.level, DiagnosticLevel::Error | DiagnosticLevel::Warning) {
            mark_device(d, &crate::output::device_note(self.triple, self.arch));
        }
        self.format.show_diagnostic(&record);
        if !error {
            return;
        }
        self.seen.errors += 1;
        if let Some(code) = &m.message.code {
            self.seen.codes_shown.insert((m.target.name.clone(), code.code.clone()));
        }
        self.seen.duplicate_symbol |= meaning == Meaning::DuplicateKernelSymbol;
        if meaning == Meaning::NeedsStd {
            let final_target = m.target.kind.iter().any(|k| !matches!(k, TargetKind::Lib | TargetKind::RLib));
            let who = StdUser { name: m.target.name.clone(), final_target };
            if !self.seen.std_missing.contains(&who) {
                self.seen.std_missing.push(who);
            }
        }
    }
}

/// cargo's own status lines (`Compiling …`), labelled as device work, as
/// they come; its other lines (warnings, errors) once it has exited, unless
/// the build was interrupted: then they are the noise of dying children.
pub fn relay_stderr(
    stderr: impl std::io::Read + Send + 'static,
    label: String,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            let meaning = classify(&line, &[]);
            if meaning == Meaning::Interrupted {
                crate::interrupt::set();
            }
            if crate::interrupt::interrupted() {
                continue;
            }
            if meaning == Meaning::Progress {
                eprintln!("{line} {label}");
            } else {
                held.push(line);
            }
        }
        held
    })
}

/// The device image of an artifact cargo reported, if it is one.
fn artifact(a: &cargo_metadata::Artifact) -> Option<DeviceArtifact> {
    let image = a.filenames.iter().find(|f| matches!(f.extension(), Some("ptx") | Some("elf")))?;
    Some(DeviceArtifact {
        crate_name: a.target.name.replace('-', "_"),
        kinds: a.target.kind.iter().map(|k| k.to_string()).collect(),
        src_path: a.target.src_path.clone().into_std_path_buf(),
        test: a.profile.test,
        image: image.clone().into_std_path_buf(),
    })
}

/// A crate that failed in the device pass because it uses `std`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdUser {
    pub name: String,
    /// A bin/test/example (the user's own code), not a library dependency.
    pub final_target: bool,
}

/// What to do when crates failed for want of `std`. A library here depends
/// on `offload` (the device pass replaces the others, see `host_only`).
pub fn hints_for(std_missing: &[StdUser]) -> Vec<String> {
    let mut h = Vec::new();
    let list = |v: Vec<&StdUser>| v.iter().map(|u| format!("`{}`", u.name)).collect::<Vec<_>>().join(", ");
    let (own, deps): (Vec<&StdUser>, Vec<&StdUser>) = std_missing.iter().partition(|u| u.final_target);
    if !own.is_empty() {
        h.push(format!(
            "{} uses `std` in code the device pass compiles; GPU targets have no `std`. Keep host-only code out of the \
             device pass with `#[offload::host]` (on `fn main`, `use std::…` and the like) or \
             `#[cfg(not(offload_device))]`; a kernel's parameters take plain data (`DeviceCopy`), `&[T]` or `&mut [T]`, \
             not `Vec`, `String` or `Box`",
            list(own)
        ));
    }
    if !deps.is_empty() {
        h.push(format!(
            "{} needed `std`, which GPU targets do not have. A library that depends on `offload` is compiled for the \
             GPU: keep its host-only code under `#[offload::host]` or `#[cfg(not(offload_device))]`; if only host \
             code uses it, it can go under `[target.'cfg(not(offload_device))'.dependencies]` in Cargo.toml",
            list(deps)
        ));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compiler-message record of the bin `app` (as cargo writes it), with
    /// spans at `bytes` of src/main.rs, the first one primary.
    fn record(message: &str, code: &str, bytes: &[(u32, u32)]) -> String {
        let span = |(i, (start, end)): (usize, &(u32, u32))| {
            serde_json::json!({"file_name": "src/main.rs", "byte_start": start, "byte_end": end,
                "line_start": 26, "line_end": 26, "column_start": 5, "column_end": 17, "is_primary": i == 0,
                "text": [], "label": null, "suggested_replacement": null, "suggestion_applicability": null,
                "expansion": null})
        };
        let spans: Vec<serde_json::Value> = bytes.iter().enumerate().map(span).collect();
        serde_json::json!({"reason": "compiler-message", "package_id": "path+file:///t/app#0.1.0",
            "manifest_path": "/t/app/Cargo.toml",
            "target": {"kind": ["bin"], "crate_types": ["bin"], "name": "app", "src_path": "/t/app/src/main.rs",
                       "edition": "2021", "doc": true, "doctest": false, "test": true},
            "message": {"$message_type": "diagnostic", "message": message,
                        "code": {"code": code, "explanation": null}, "level": "error", "spans": spans,
                        "children": [], "rendered": format!("error[{code}]: {message}\n\n")}})
        .to_string()
    }

    /// rustc 1.101's errors at `wave(t, out);` in a kernel: offload's E0277
    /// at the first argument (`t`, its label `required by a bound introduced
    /// by this call` at `wave`), then E0061 at `wave`, which is not shown;
    /// an E0061 elsewhere is.
    #[test]
    fn the_argument_count_error_after_a_kernel_call_is_left_out() {
        let rule = "a kernel cannot call or launch another kernel";
        let takes = "this function takes 3 arguments but 2 arguments were supplied";
        let run = |lines: &[String]| {
            let (known, dir, deps) = (HashSet::new(), std::path::PathBuf::from("/nonexistent"), Default::default());
            let mut r = Reader {
                format: MessageFormat::from_values(&["json".to_string()]),
                triple: "nvptx64-nvidia-cuda",
                arch: "sm_90",
                ptx_feature: None,
                known: &known,
                host_only_dir: &dir,
                lib_deps: &deps,
                seen: Seen::default(),
            };
            r.read(lines.join("\n").as_bytes());
            r.seen.errors
        };
        let (callee, first_arg, elsewhere) = ((700, 704), (705, 706), (900, 904));
        let e0277 = record(rule, "E0277", &[first_arg, callee]);
        assert_eq!(run(&[e0277.clone(), record(takes, "E0061", &[callee, (704, 712)])]), 1);
        assert_eq!(run(&[e0277, record(takes, "E0061", &[elsewhere])]), 2);
        assert_eq!(run(&[record(takes, "E0061", &[callee])]), 1, "no kernel call: shown");
    }

    #[test]
    fn std_hint_names_the_crates() {
        let h = hints_for(&[StdUser { name: "kernels".into(), final_target: false }]);
        assert!(h[0].starts_with("`kernels` needed `std`"), "{h:?}");
        assert!(h[0].contains("cfg(not(offload_device))"));
        let h = hints_for(&[StdUser { name: "app".into(), final_target: true }]);
        assert!(h[0].starts_with("`app` uses `std`"), "{h:?}");
        assert!(h[0].contains("#[offload::host]"));
        assert!(hints_for(&[]).is_empty());
    }
}
