//! Host-only dependencies: a dependency that cannot be built for the GPU
//! (it needs `std`, or fails for the GPU target in any other way) is
//! replaced in the device pass by an empty crate, so that a dependency that
//! only host code uses can stay in plain `[dependencies]`.
//!
//! Why the rustc wrapper and not cargo: which dependencies build for the GPU
//! is only known by compiling them. A `[patch]` given to the device cargo
//! through `--config` would have to name each one (with a version that
//! matches the lock file) before the build; the wrapper sees each crate
//! fail, and replaces exactly those.
//!
//! How (device phase, [`compile`]): a library compiled for the GPU that
//! does not depend on `offload` (so it defines no kernel; the device image
//! loses nothing without it) is compiled with rustc's stderr read by the
//! wrapper, passed on to cargo as it comes until the first error, held
//! after it. If rustc fails, the crate is compiled again from an empty root
//! file with the same arguments: the same crate name and output files, which
//! cargo takes as that crate's (its failed attempt's messages are dropped:
//! nothing of its `std` errors is shown). A marker file in
//! [`HOST_ONLY_DIR_VAR`] records the crate and its first error; a later
//! successful compile removes it. The empty crate's dep-info lists the real
//! sources too, so that cargo compiles it again when they change. If the
//! empty crate fails as well, or rustc had already announced the crate's
//! metadata to cargo, the first attempt's messages are shown as they were.
//!
//! Then device code that names the crate fails to compile: the cargo phase
//! turns the first such error of each crate into one error at that use,
//! naming the crate, why it does not build for the GPU, and what to do
//! ([`rewrite`]), and leaves out the others naming it. A crate that builds
//! for the GPU because it only re-exports a replaced one (a facade: `clap`
//! of `clap_builder`) is empty too in effect: an error naming it is
//! rewritten the same way, naming both ([`named`], from the dependency graph
//! of `cargo metadata`, [`lib_deps`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::arg::Args;
use crate::diagnostic::{classify, Meaning};
use crate::errors::Result;
use crate::phases::rustc;

/// The directory of the markers of crates replaced by empty ones (set by
/// the cargo phase for the device pass: `<device target dir>/host-only`).
pub const HOST_ONLY_DIR_VAR: &str = "__OFFLOAD_HOST_ONLY_DIR";

/// Whether the device phase may replace this crate by an empty one: a
/// library (not a final crate) that does not depend on `offload`.
pub fn replaceable(args: &Args) -> bool {
    let types = args.crate_types();
    !args.is_final()
        && !types.is_empty()
        && types.iter().all(|t| matches!(*t, "lib" | "rlib"))
        && args.crate_name() != Some("offload")
        && !args.extern_names().contains(&"offload")
        && args.flag_value("--out-dir").is_some()
}

/// A crate the device pass replaced by an empty one, as its marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The crate's name (`simd_adler32`).
    pub krate: String,
    /// It failed for want of `std`.
    pub std: bool,
    /// Its first error's message.
    pub first: String,
}

/// What the first attempt at a crate printed (see [`compile`]).
#[derive(Default)]
struct Attempt {
    /// Lines held from the first error on.
    held: Vec<String>,
    /// rustc told cargo that the crate's metadata is written, before any error.
    announced: bool,
    /// The message of each error, and whether it was for want of `std`.
    errors: Vec<(String, bool)>,
    /// The lines passed on.
    passed: Vec<String>,
}

/// Passes rustc's stderr on to cargo (this process's stderr) until the
/// first error; holds the rest.
fn read_attempt(stderr: impl std::io::Read) -> Attempt {
    let mut a = Attempt::default();
    let mut out = std::io::stderr();
    for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v.get("level").and_then(Value::as_str) == Some("error") {
            let message = v.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
            let children: Vec<&str> = v
                .get("children")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(|c| c.get("message").and_then(Value::as_str)).collect())
                .unwrap_or_default();
            let std = classify(&message, &children) == Meaning::NeedsStd;
            a.errors.push((message, std));
        }
        if !a.errors.is_empty() {
            a.held.push(line);
            continue;
        }
        a.announced |= v.get("emit").and_then(Value::as_str) == Some("metadata");
        let _ = writeln!(out, "{line}");
        a.passed.push(line);
    }
    a
}

/// Compiles a [`replaceable`] crate (`args`: cargo's, `device_args`: the
/// device phase's rewrite), replacing it by an empty crate if it fails (see
/// the module docs), with its marker in `markers` (the cargo phase's
/// [`HOST_ONLY_DIR_VAR`]); returns rustc's exit code, and the stderr lines
/// of a crate that compiled as it is (not replaced), for the crate cache.
pub fn compile(
    rustc: &str,
    args: &Args,
    device_args: &[String],
    markers: Option<&Path>,
) -> Result<(i32, Option<Vec<String>>)> {
    let mut cmd = rustc::command(rustc, device_args);
    let mut running = crate::child::spawn(cmd.stderr(Stdio::piped()))?;
    let attempt = read_attempt(running.child.stderr.take().expect("piped"));
    let code = rustc::exit_code(&running.wait()?);
    let marker = markers
        .zip(args.crate_name())
        .map(|(dir, name)| dir.join(format!("{name}{}", args.codegen("extra-filename").unwrap_or(""))));
    if code == 0 {
        if let Some(m) = marker {
            let _ = std::fs::remove_file(m);
        }
        return Ok((0, Some(attempt.passed)));
    } else if !attempt.announced
        && attempt.errors.iter().any(|(m, _)| !m.is_empty())
        && replace(rustc, args, device_args)?
    {
        let first = attempt.errors.iter().find(|(_, std)| *std).or(attempt.errors.first()).cloned().unwrap_or_default();
        if let Some(m) = marker {
            let text = format!("{}\n{}\n", if first.1 { "std" } else { "other" }, first.0);
            let _ = offload_image::file::write_if_changed(&m, text.as_bytes());
        }
        return Ok((0, None));
    }
    let mut err = std::io::stderr().lock();
    for line in attempt.held {
        let _ = writeln!(err, "{line}");
    }
    Ok((code, None))
}

/// The empty crate in place of the failed one: `device_args` with the root
/// file replaced by an empty one (`#![no_std]` if no `-Zcrate-attr=no_std`
/// says so), written beside the crate's outputs so that the path stays the
/// same from build to build; its dep-info then names the real sources too.
/// Whether it compiled.
fn replace(rustc: &str, args: &Args, device_args: &[String]) -> Result<bool> {
    let (Some(out_dir), Some(name), Some(at)) =
        (args.flag_value("--out-dir"), args.crate_name(), Args::new(device_args.to_vec()).source_index())
    else {
        return Ok(false);
    };
    let extra = args.codegen("extra-filename").unwrap_or("");
    let root = Path::new(out_dir).join(format!("{name}{extra}-host-only.rs"));
    let attr = device_args.iter().any(|a| a == "-Zcrate-attr=no_std");
    let text = if attr {
        "// An empty crate in place of one that does not build for the GPU (cargo offload).\n"
    } else {
        "#![no_std]\n"
    };
    if offload_image::file::write_if_changed(&root, text.as_bytes()).is_err() {
        return Ok(false);
    }
    // Older than this compilation: cargo takes a source file changed after
    // a compilation began as a reason to compile the crate again next time.
    let epoch = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
    let _ = std::fs::File::options().write(true).open(&root).and_then(|f| f.set_modified(epoch));
    let dep_info = args.dep_info_path();
    let real_deps = dep_info.as_ref().and_then(|d| std::fs::read_to_string(d).ok()).map(|d| first_rule_deps(&d));
    let mut empty = device_args.to_vec();
    empty[at] = root.display().to_string();
    let code = rustc::exit_code(&crate::child::status(&mut rustc::command(rustc, &empty))?);
    if code != 0 {
        return Ok(false);
    }
    if let Some(d) = dep_info {
        if let Ok(mut contents) = std::fs::read_to_string(&d) {
            let own: Vec<PathBuf> = real_deps.unwrap_or_default().into_iter().map(PathBuf::from).collect();
            for dep in own.iter().map(PathBuf::as_path).chain(args.source_file().map(Path::new)) {
                if !first_rule_deps(&contents).iter().any(|p| Path::new(p) == dep) {
                    contents = crate::phases::rustc_host::add_dep_info(&contents, dep);
                }
            }
            let _ = offload_image::file::write_atomic(&d, contents.as_bytes());
        }
    }
    log(name);
    Ok(true)
}

/// Appends `<name>\thost-only` to the compile log, for the cargo phase's status line.
fn log(name: &str) {
    if let Some(log) = std::env::var_os(crate::handoff::COMPILE_LOG_VAR) {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = writeln!(f, "{name}\thost-only");
        }
    }
}

/// The paths the first rule of a Makefile-style dep-info file depends on
/// (`\ ` unescaped).
pub fn first_rule_deps(contents: &str) -> Vec<String> {
    let Some(line) = contents.lines().find(|l| !l.starts_with('#') && (l.contains(": ") || l.ends_with(':'))) else {
        return Vec::new();
    };
    let deps = line.split_once(": ").map(|(_, d)| d).unwrap_or_default();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => cur.push(chars.next().unwrap_or(' ')),
            ' ' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The markers in `dir` (cargo phase).
pub fn markers(dir: &Path) -> Vec<Marker> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<Marker> = Vec::new();
    for e in rd.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let krate = file.split('-').next().unwrap_or_default().to_string();
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let mut lines = text.lines();
        let std = lines.next() == Some("std");
        let first = lines.next().unwrap_or_default().to_string();
        if !krate.is_empty() && !out.iter().any(|m| m.krate == krate) {
            out.push(Marker { krate, std, first });
        }
    }
    out
}

/// The direct library dependencies of each library crate of the graph
/// that does not depend on `offload` (crate names, `-` as `_`; from `cargo
/// metadata`'s resolve graph): how an error naming a crate that the device
/// pass compiled (a facade, `clap`) is tied to the replaced crate it
/// re-exports (`clap_builder`).
pub type LibDeps = BTreeMap<String, BTreeSet<String>>;

/// [`LibDeps`] of a `cargo metadata` with its resolve graph (empty without one).
pub fn lib_deps(meta: &cargo_metadata::Metadata) -> LibDeps {
    let lib_of = |id: &cargo_metadata::PackageId| {
        meta.packages
            .iter()
            .find(|p| p.id == *id)?
            .targets
            .iter()
            .find(|t| t.is_lib() || t.is_rlib() || t.is_proc_macro())
            .map(|t| t.name.replace('-', "_"))
    };
    let mut out = LibDeps::new();
    for node in meta.resolve.iter().flat_map(|r| &r.nodes) {
        let Some(krate) = lib_of(&node.id) else { continue };
        let deps: BTreeSet<String> = node
            .deps
            .iter()
            .filter(|d| d.dep_kinds.iter().any(|k| k.kind == cargo_metadata::DependencyKind::Normal))
            .filter_map(|d| lib_of(&d.pkg))
            .collect();
        if !deps.contains("offload") && krate != "offload" {
            out.entry(krate).or_default().extend(deps);
        }
    }
    out
}

/// What an error at a use of a replaced crate names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<'m> {
    /// The crate the device pass replaced.
    pub marker: &'m Marker,
    /// The crate the code names, if not that one: a crate that compiled for
    /// the GPU and depends on it (a facade re-exporting it: `clap` of
    /// `clap_builder`).
    pub facade: Option<&'m str>,
}

impl<'m> Named<'m> {
    /// The crate the code names.
    pub fn krate(&self) -> &'m str {
        self.facade.unwrap_or(&self.marker.krate)
    }
}

/// The replaced crate an error message names, if any: as a path
/// (`` `rayon::prelude` ``), or as `` crate `x` `` or `` in `x` ``; else
/// through a crate of `deps` that depends on one (a facade: `` cannot find
/// `ColorChoice` in `clap` `` when `clap_builder` was replaced).
pub fn named<'m>(message: &str, markers: &'m [Marker], deps: &'m LibDeps) -> Option<Named<'m>> {
    let mentions = |k: &str| {
        [format!("`{k}::"), format!("`::{k}::"), format!("crate `{k}`"), format!("in `{k}`")]
            .iter()
            .any(|p| message.contains(p.as_str()))
    };
    if let Some(marker) = markers.iter().find(|m| mentions(&m.krate)) {
        return Some(Named { marker, facade: None });
    }
    deps.iter().filter(|(k, _)| mentions(k)).find_map(|(k, ds)| {
        let marker = markers.iter().find(|m| ds.contains(&m.krate))?;
        Some(Named { marker, facade: Some(k.as_str()) })
    })
}

/// The error at a use of a replaced crate, in place of rustc's (`d`: the
/// diagnostic of a `compiler-message` record): the crate, why it does not
/// build for `triple`, and what to do; at rustc's spans.
pub fn rewrite(d: &mut Value, named: Named<'_>, triple: &str) {
    let (m, k) = (named.marker, named.krate());
    let why = if m.std { "it needs `std`".to_string() } else { format!("its first error: {}", m.first) };
    let message = match named.facade {
        None => format!(
            "crate `{k}` cannot be used in device code: it does not build for {triple} ({why}), so the device pass \
             compiled an empty crate in its place"
        ),
        Some(_) => format!(
            "crate `{k}` cannot be used in device code: it re-exports `{}`, which does not build for {triple} \
             ({why}), so the device pass compiled an empty crate in its place",
            m.krate
        ),
    };
    let help = format!(
        "use `{k}` in host code only: mark the item that names it here `#[offload::host]` or \
         `#[cfg(not(offload_device))]`; device code can use only crates that build for the GPU (`no_std`)"
    );
    if let Some(Value::String(r)) = d.get_mut("rendered") {
        let rest = r.split_once('\n').map(|(_, rest)| rest).unwrap_or_default();
        let head = if r.contains('\x1b') {
            format!("\x1b[0m\x1b[1m\x1b[38;5;9merror\x1b[0m\x1b[0m\x1b[1m: {message}\x1b[0m")
        } else {
            format!("error: {message}")
        };
        *r = crate::output::with_line(&format!("{head}\n{rest}"), "help", &help);
    }
    d["message"] = Value::String(message);
    d["code"] = Value::Null;
    d["children"] = serde_json::json!([{
        "$message_type": "diagnostic", "message": help, "code": null, "level": "help",
        "spans": [], "children": [], "rendered": null,
    }]);
}

#[cfg(test)]
mod tests;
