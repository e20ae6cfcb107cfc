//! The device pass's crate cache: what the device pass compiles for every
//! new target directory and that does not depend on the project — the
//! `offload` crate and its libraries for the GPU, and the proc macros and
//! build scripts they need, compiled by the device rustc for the host —
//! compiled once and copied into each new project's device target
//! directory (sccache's model, for the crates it can trust).
//!
//! Which crates: those whose sources cannot change under the same name —
//! a crate from a registry (its root file under `$CARGO_HOME/registry/src`,
//! unpacked from a checksummed `.crate`) or one of offload's own packages
//! used by path (a clone's `crates/offload`, `offload-macros`,
//! `offload-image`), whose files the cargo phase hashes
//! ([`own_sources`]). Not the user's crates, nor a crate compiled
//! incrementally.
//!
//! The key ([`key`]) hashes ([`offload_image::hash`]): the device rustc
//! (path, `rustc -vV`, size and modification time), for offload's own
//! packages the hash of their files, rustc's working directory and
//! arguments, and the environment cargo sets for rustc (`CARGO_PKG_*`,
//! `OUT_DIR`, …), every path below the device target directory written as
//! a placeholder. The arguments carry `-C metadata` (cargo's hash of the
//! package, its version, features, profile and dependencies), every
//! `--cfg`, the `--extern` names and files, and the device flags.
//!
//! Layout: `<cache>/crates/<crate>-<key>/` holds the files rustc wrote
//! (those its `{"artifact":…}` messages name: `.rlib`, `.rmeta`, `.so`,
//! build script executables, the dep-info `.d`) and `offload-crate.json`
//! (rustc's stderr, to replay, and the environment variables its dep-info
//! says the crate read, with their values). `<cache>` is the sysroot's
//! (`OFFLOAD_CACHE_DIR`, …, see `sysroot.rs`). An entry is stored only if
//! rustc succeeded and every source file its dep-info names is one the key
//! covers (a crate that `include!`s a file generated in the target
//! directory is compiled every time). Text (the dep-info, stderr) has the
//! target directory replaced by a placeholder, restored on a hit; binary
//! files are copied as they are.
//!
//! Concurrent builds: a compile that misses holds `<entry>.lock` (`flock`)
//! while it compiles and stores, so a second build waiting for the same
//! crate takes the first one's result; an entry is assembled in a
//! temporary directory renamed into place, so an interrupted build leaves
//! nothing a later one would read. Entries can be deleted whenever no
//! build runs (`rm -rf ~/.cache/offload/crates`). `OFFLOAD_CRATE_CACHE=0`
//! or `OFFLOAD_BUILD_STD=1` turns the cache off.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::arg::Args;

/// `0` turns the crate cache off.
pub const OPT_OUT_VAR: &str = "OFFLOAD_CRATE_CACHE";
/// The cargo phase tells the device phase where the cache is (`<cache>/crates`).
pub const DIR_VAR: &str = "__OFFLOAD_CRATE_CACHE";
/// ... the identity of the device rustc ([`toolchain_identity`]).
pub const RUSTC_VAR: &str = "__OFFLOAD_CRATE_CACHE_RUSTC";
/// ... the device target directory, written as a placeholder in keys and entries.
pub const TARGET_DIR_VAR: &str = "__OFFLOAD_CRATE_CACHE_TARGET_DIR";
/// ... offload's own packages used by path: `<hash>` then each package
/// directory, separated by `\x1f` ([`own_sources`]).
pub const OWN_VAR: &str = "__OFFLOAD_OWN_SOURCES";

/// Version of the entries' format and of what the key covers.
const RECIPE: &str = "offload-crate-cache 1";
/// Stands for the device target directory in keys and stored text.
const PLACEHOLDER: &str = "@OFFLOAD_DEVICE_TARGET_DIR@";
/// The packages of offload's own whose sources [`own_sources`] hashes.
pub const OWN_PACKAGES: &[&str] = &["offload", "offload-macros", "offload-image"];
/// The environment variables, besides `CARGO_PKG_*` and `CARGO_BIN_EXE_*`,
/// that cargo sets for rustc (and that a crate can read with `env!`) or
/// that change what rustc does.
const KEY_ENV: &[&str] = &[
    "CARGO",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
    "RUSTC_BOOTSTRAP",
    "__OFFLOAD_INNER_WRAPPER",
];

/// Whether the cargo phase turns the cache on: not with `OFFLOAD_BUILD_STD=1`
/// (the device pass compiles `core` itself) nor `OFFLOAD_CRATE_CACHE=0`.
pub fn enabled() -> bool {
    !crate::sysroot::build_std() && std::env::var(OPT_OUT_VAR).map_or(true, |v| v != "0")
}

/// What the device rustc is: its path, `rustc -vV` (`version`), and the
/// executable's size and modification time.
pub fn toolchain_identity(rustc: &Path, version: &str) -> String {
    format!("{} {version} {}", rustc.display(), crate::sysroot::file_identity(rustc))
}

/// `<hash>\x1f<dir>\x1f<dir>…` for [`OWN_VAR`]: the hash covers the
/// relative path and bytes of every file below each package directory
/// (`dirs`, in the given order) except `target/` and hidden entries.
pub fn own_sources(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return String::new();
    }
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for d in dirs {
        parts.push(d.display().to_string().into_bytes());
        let mut files = Vec::new();
        walk(d, d, &mut files);
        files.sort();
        for (rel, path) in files {
            parts.push(rel.into_bytes());
            parts.push(std::fs::read(path).unwrap_or_default());
        }
    }
    let hash = offload_image::hash::fnv64_parts(&parts);
    std::iter::once(format!("{hash:016x}"))
        .chain(dirs.iter().map(|d| d.display().to_string()))
        .collect::<Vec<_>>()
        .join("\x1f")
}

/// The files below `dir` that [`own_sources`] hashes, as (path relative to
/// `root`, path).
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if !covered(root, &p) {
            continue;
        }
        if p.is_dir() {
            walk(root, &p, out);
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push((rel.display().to_string(), p.clone()));
        }
    }
}

/// Whether `path` is below `root` and not in a part [`own_sources`] skips.
fn covered(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else { return false };
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
    parts.clone().next().is_none_or(|c| c != "target") && !parts.any(|c| c.starts_with('.'))
}

/// Everything the key hashes, read from the environment by [`Slot::new`].
#[derive(Debug, Clone)]
pub struct KeyInputs {
    /// [`toolchain_identity`].
    pub rustc: String,
    /// The hash of [`own_sources`] for offload's own packages; `registry` else.
    pub sources: String,
    /// The device target directory.
    pub target_dir: String,
    pub cwd: String,
    /// The arguments rustc gets.
    pub argv: Vec<String>,
    /// `(name, value)` of the [`KEY_ENV`] variables that are set.
    pub env: Vec<(String, String)>,
}

/// `text` with the target directory written as the placeholder.
fn normalize(text: &str, target_dir: &str) -> String {
    if target_dir.is_empty() {
        return text.to_string();
    }
    text.replace(target_dir, PLACEHOLDER)
}

/// The key of a compilation: a hash of its [`KeyInputs`], every path below
/// the target directory written relative to it.
pub fn key(k: &KeyInputs) -> u64 {
    let n = |s: &str| normalize(s, &k.target_dir);
    let mut parts = vec![RECIPE.to_string(), env!("CARGO_PKG_VERSION").to_string(), k.rustc.clone(), k.sources.clone()];
    parts.push(n(&k.cwd));
    parts.push(format!("argv {}", k.argv.len()));
    parts.extend(k.argv.iter().map(|a| n(a)));
    parts.extend(k.env.iter().map(|(name, v)| format!("{name}={}", n(v))));
    offload_image::hash::fnv64_parts(&parts)
}

/// The [`KEY_ENV`], `CARGO_PKG_*` and `CARGO_BIN_EXE_*` variables that are
/// set, sorted by name.
fn key_env() -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else { continue };
        if KEY_ENV.contains(&k) || k.starts_with("CARGO_PKG_") || k.starts_with("CARGO_BIN_EXE_") {
            env.insert(k.to_string(), v.to_string());
        }
    }
    env.into_iter().collect()
}

/// `offload-crate.json`: what an entry holds besides the files.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    /// The files, by name (they go to rustc's `--out-dir`).
    files: Vec<String>,
    /// rustc's stderr lines, target directory as the placeholder.
    stderr: Vec<String>,
    /// The environment variables the crate read (its dep-info's `env-dep`
    /// lines) and their values then (normalized; `None`: unset).
    env_deps: Vec<(String, Option<String>)>,
}

const MANIFEST: &str = "offload-crate.json";

/// Where one compilation's entry is, or would be, and what it needs to
/// restore one.
#[derive(Debug)]
pub struct Slot {
    /// `<cache>/crates/<crate>-<key>`.
    pub entry: PathBuf,
    out_dir: PathBuf,
    target_dir: String,
    /// The directories the key covers the sources of.
    roots: Vec<PathBuf>,
    argv: Vec<String>,
}

/// `argv` without `-C incremental=…` (in either form).
fn without_incremental(argv: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(argv.len());
    for a in argv {
        if a.starts_with("incremental=") && out.last().is_some_and(|l| l == "-C" || l == "--codegen") {
            out.pop();
        } else if !a.starts_with("-Cincremental=") && !a.starts_with("--codegen=incremental=") {
            out.push(a.clone());
        }
    }
    out
}

/// `$CARGO_HOME/registry/src`, where cargo unpacks registry crates.
fn registry_src() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cargo")))?;
    Some(home.join("registry").join("src"))
}

/// What identifies the sources of the crate whose root file is `src`: the
/// hash that stands for them in the key, and the directories it covers;
/// `None` for a crate whose sources the cache cannot trust.
fn sources_of(src: &Path, own: Option<&str>) -> Option<(String, Vec<PathBuf>)> {
    if let Some(reg) = registry_src().filter(|r| covered(r, src)) {
        return Some(("registry".into(), vec![reg]));
    }
    let mut own = own?.split('\x1f');
    let hash = own.next().filter(|h| !h.is_empty())?.to_string();
    let dirs: Vec<PathBuf> = own.map(PathBuf::from).collect();
    dirs.iter().any(|d| covered(d, src)).then_some((hash, dirs))
}

impl Slot {
    /// The slot of a compilation of the device pass (`args`: cargo's
    /// arguments, `argv`: those rustc gets), if the cargo phase turned the
    /// cache on and the crate is one it keeps (see the module docs).
    pub fn new(args: &Args, argv: &[String]) -> Option<Slot> {
        let cache = std::env::var_os(DIR_VAR).filter(|d| !d.is_empty())?;
        let rustc = std::env::var(RUSTC_VAR).ok().filter(|r| !r.is_empty())?;
        let target_dir = std::env::var(TARGET_DIR_VAR).ok().filter(|t| !t.is_empty())?;
        let (out_dir, name) = (args.flag_value("--out-dir")?, args.crate_name()?);
        let src = Path::new(args.source_file()?);
        if !src.is_absolute() {
            return None;
        }
        let (sources, roots) = sources_of(src, std::env::var(OWN_VAR).ok().as_deref())?;
        // cargo compiles path dependencies incrementally; a compilation
        // shared by every project gains nothing from it.
        let argv = without_incremental(argv);
        let cwd = std::env::current_dir().ok()?.display().to_string();
        let inputs = KeyInputs { rustc, sources, target_dir: target_dir.clone(), cwd, argv, env: key_env() };
        let entry = Path::new(&cache).join(format!("{name}-{:016x}", key(&inputs)));
        Some(Slot { entry, out_dir: PathBuf::from(out_dir), target_dir, roots, argv: inputs.argv })
    }

    /// The arguments to compile with on a miss: the device phase's, less
    /// `-C incremental`.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// Takes `<entry>.lock` (waiting while another build holds it).
    pub fn lock(&self) -> Option<nix::fcntl::Flock<File>> {
        use nix::fcntl::{Flock, FlockArg};
        std::fs::create_dir_all(self.entry.parent()?).ok()?;
        let file = File::create(self.entry.with_extension("lock")).ok()?;
        Flock::lock(file, FlockArg::LockExclusive).ok()
    }

    /// On a hit, writes the entry's files into rustc's `--out-dir` and its
    /// stderr to this process's (to cargo), as rustc would have; `false`
    /// if there is no entry, it does not apply (a variable the crate reads
    /// has changed), or it could not be copied.
    pub fn restore(&self) -> bool {
        let Ok(text) = std::fs::read(self.entry.join(MANIFEST)) else { return false };
        let Ok(m) = serde_json::from_slice::<Manifest>(&text) else { return false };
        if m.env_deps.iter().any(|(k, v)| self.env_value(k) != *v) {
            return false;
        }
        for f in &m.files {
            let (from, to) = (self.entry.join(f), self.out_dir.join(f));
            let ok = if f.ends_with(".d") {
                std::fs::read_to_string(&from).is_ok_and(|d| {
                    offload_image::file::write_atomic(&to, d.replace(PLACEHOLDER, &self.target_dir).as_bytes()).is_ok()
                })
            } else {
                let tmp = offload_image::file::unique_tmp(&to);
                let ok = std::fs::copy(&from, &tmp).is_ok() && std::fs::rename(&tmp, &to).is_ok();
                let _ = std::fs::remove_file(&tmp);
                ok
            };
            if !ok {
                return false;
            }
        }
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        for l in &m.stderr {
            let _ = writeln!(err, "{}", l.replace(PLACEHOLDER, &self.target_dir));
        }
        true
    }

    /// The value of `name` as an entry records it.
    fn env_value(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().map(|v| normalize(&v, &self.target_dir))
    }

    /// Stores what a successful rustc wrote (the files its `stderr` lines
    /// name as artifacts), if every source file its dep-info names is
    /// covered by the key; an error only leaves the entry out.
    pub fn store(&self, stderr: &[String]) {
        let tmp = offload_image::file::unique_tmp(&self.entry);
        if self.try_store(stderr, &tmp).is_none() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }

    fn try_store(&self, stderr: &[String], tmp: &Path) -> Option<()> {
        let artifacts: Vec<PathBuf> = stderr
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("artifact").and_then(|a| a.as_str()).map(PathBuf::from))
            .collect();
        let dep_info = artifacts.iter().find(|a| a.extension().is_some_and(|e| e == "d"))?;
        let env_deps = self.check_dep_info(&std::fs::read_to_string(dep_info).ok()?)?;
        std::fs::create_dir_all(tmp).ok()?;
        let mut files = Vec::new();
        for a in &artifacts {
            (a.parent()? == self.out_dir).then_some(())?;
            let name = a.file_name()?.to_str()?.to_string();
            if a == dep_info {
                let text = normalize(&std::fs::read_to_string(a).ok()?, &self.target_dir);
                std::fs::write(tmp.join(&name), text).ok()?;
            } else {
                std::fs::copy(a, tmp.join(&name)).ok()?;
            }
            files.push(name);
        }
        let stderr = stderr.iter().map(|l| normalize(l, &self.target_dir)).collect();
        let manifest = serde_json::to_vec_pretty(&Manifest { files, stderr, env_deps }).ok()?;
        std::fs::write(tmp.join(MANIFEST), manifest).ok()?;
        // Under the lock: nobody else renames to the entry. An entry that
        // did not apply (see `restore`) is replaced.
        let _ = std::fs::remove_dir_all(&self.entry);
        std::fs::rename(tmp, &self.entry).ok()
    }

    /// The environment variables a dep-info file says the crate read, with
    /// their values; `None` if it names a source file the key does not cover.
    fn check_dep_info(&self, dep_info: &str) -> Option<Vec<(String, Option<String>)>> {
        let deps = crate::host_only::first_rule_deps(dep_info);
        if deps.iter().any(|d| !self.roots.iter().any(|r| covered(r, Path::new(d)))) {
            return None;
        }
        let names = dep_info.lines().filter_map(|l| l.strip_prefix("# env-dep:"));
        Some(
            names
                .map(|l| l.split_once('=').map_or(l, |(k, _)| k))
                .map(|k| (k.to_string(), self.env_value(k)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("offload-crate-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The arguments and environment of `offload` compiled for the GPU in
    /// the device target directory `t`.
    fn inputs(t: &str, sources: &str) -> KeyInputs {
        KeyInputs {
            rustc: "/tc/bin/rustc rustc 1.96.0 (ac68faa20 2026-05-25) 1000:1".into(),
            sources: sources.into(),
            target_dir: t.into(),
            cwd: "/src/offload".into(),
            argv: v(&format!(
                "--crate-name offload /src/offload/src/lib.rs --crate-type lib --emit=dep-info,metadata,link \
                 -C metadata=64ca9089a650405f --out-dir {t}/nvptx64-nvidia-cuda/debug/deps \
                 --target nvptx64-nvidia-cuda -L dependency={t}/debug/deps \
                 --extern force:offload_macros={t}/debug/deps/liboffload_macros-e9d5.so -Ctarget-cpu=sm_90"
            )),
            env: vec![
                ("CARGO_MANIFEST_DIR".into(), "/src/offload".into()),
                ("CARGO_PKG_VERSION".into(), "0.1.0".into()),
                ("OUT_DIR".into(), format!("{t}/nvptx64-nvidia-cuda/debug/build/offload-1/out")),
            ],
        }
    }

    /// The key changes with the sources of offload's own packages, a
    /// feature, the rustc, the CPU and cargo's environment, and not with
    /// the project (its device target directory).
    #[test]
    fn one_entry_per_source_feature_and_rustc_not_per_project() {
        let dir = scratch("key");
        let (offload, macros) = (dir.join("offload"), dir.join("offload-macros"));
        for d in [&offload, &macros] {
            std::fs::create_dir_all(d.join("src")).unwrap();
            std::fs::write(d.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        }
        let own = || own_sources(&[offload.clone(), macros.clone()]);
        let before = own();
        assert_eq!(own(), before, "deterministic");
        assert!(before.ends_with(&format!("\x1f{}\x1f{}", offload.display(), macros.display())), "{before:?}");
        // Build outputs and editor files inside a package are not its sources.
        std::fs::create_dir_all(offload.join("target/debug")).unwrap();
        std::fs::write(offload.join("target/debug/x"), "x").unwrap();
        std::fs::write(offload.join("src/.lib.rs.swp"), "x").unwrap();
        assert_eq!(own(), before, "target/ and hidden files are not hashed");
        std::fs::write(macros.join("src/lib.rs"), "pub fn f() {}\n ").unwrap();
        let edited = own();
        assert_ne!(edited, before, "one byte of offload-macros");
        std::fs::write(macros.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        assert_eq!(own(), before, "the same bytes again");
        let _ = std::fs::remove_dir_all(&dir);

        let h = |s: &str| s.split('\x1f').next().unwrap().to_string();
        let base = inputs("/p/a/target/offload/nvptx64-nvidia-cuda-sm_90", &h(&before));
        let other_project = inputs("/home/u/b/target/offload/nvptx64-nvidia-cuda-sm_90", &h(&before));
        assert_eq!(key(&base), key(&other_project), "another project's target directory");
        let mut keys = vec![key(&base)];
        keys.push(key(&inputs("/p/a/target/offload/nvptx64-nvidia-cuda-sm_90", &h(&edited))));
        let mut feature = base.clone();
        feature.argv.extend(v("--cfg feature=\"std\""));
        keys.push(key(&feature));
        let mut nightly = base.clone();
        nightly.rustc = "/tc/bin/rustc rustc 1.101.0-nightly (92b5b8c87 2026-10-29) 1000:1".into();
        keys.push(key(&nightly));
        let mut reinstalled = base.clone();
        reinstalled.rustc = "/tc/bin/rustc rustc 1.96.0 (ac68faa20 2026-05-25) 1000:2".into();
        keys.push(key(&reinstalled));
        let mut cpu = base.clone();
        *cpu.argv.last_mut().unwrap() = "-Ctarget-cpu=sm_80".into();
        keys.push(key(&cpu));
        let mut version = base.clone();
        version.env[1].1 = "0.1.1".into();
        keys.push(key(&version));
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "every change is a new entry");
    }

    #[test]
    fn incremental_is_dropped_in_either_form() {
        let argv =
            v("--crate-name o -C incremental=/t/inc -Cincremental=/t/i2 --codegen=incremental=/t/i3 -C opt-level=0");
        assert_eq!(without_incremental(&argv), v("--crate-name o -C opt-level=0"));
    }

    fn slot(entry: &Path, out_dir: &Path, target_dir: &Path, roots: &[&Path]) -> Slot {
        Slot {
            entry: entry.to_path_buf(),
            out_dir: out_dir.to_path_buf(),
            target_dir: target_dir.display().to_string(),
            roots: roots.iter().map(|r| r.to_path_buf()).collect(),
            argv: Vec::new(),
        }
    }

    /// What one project stored, another restores into its own target
    /// directory: the files, the dep-info with its paths, the variables the
    /// crate read; nothing from an interrupted store, nothing that read a
    /// file outside the sources the key covers.
    #[test]
    fn an_entry_restores_into_another_project() {
        let dir = scratch("roundtrip");
        let src = dir.join("registry/src/index/lib-1.0.0/src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("lib.rs"), "").unwrap();
        let root = dir.join("registry/src");
        let (ta, tb) = (dir.join("a/target/offload/sm_90"), dir.join("b/target/offload/sm_90"));
        let (outa, outb) = (ta.join("debug/deps"), tb.join("debug/deps"));
        std::fs::create_dir_all(&outa).unwrap();
        std::fs::create_dir_all(&outb).unwrap();
        let entry = dir.join("cache/crates/lib-0123");
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        let a = slot(&entry, &outa, &ta, &[&root]);
        let (rlib, d) = (outa.join("liblib-1.rlib"), outa.join("lib-1.d"));
        std::fs::write(&rlib, b"\x00rlib bytes").unwrap();
        let dep_info = |out: &Path, extra: &str| {
            format!(
                "{}: {}{extra}\n\n{}:\n\n# env-dep:OFFLOAD_TEST_CRATE_CACHE_VAR\n",
                out.join("liblib-1.rlib").display(),
                src.join("lib.rs").display(),
                src.join("lib.rs").display()
            )
        };
        std::fs::write(&d, dep_info(&outa, "")).unwrap();
        let stderr: Vec<String> =
            [&rlib, &d].iter().map(|p| format!("{{\"artifact\":\"{}\",\"emit\":\"x\"}}", p.display())).collect();
        let b = slot(&entry, &outb, &tb, &[&root]);
        // An interrupted store leaves only a temporary directory: no entry.
        std::fs::create_dir_all(offload_image::file::unique_tmp(&entry)).unwrap();
        assert!(!b.restore(), "a partial entry is never read");
        // A crate that read a file the key does not cover is not stored.
        std::fs::write(&d, dep_info(&outa, &format!(" {}", ta.join("gen.rs").display()))).unwrap();
        a.store(&stderr);
        assert!(!entry.exists(), "a file in the target directory");
        std::fs::write(&d, dep_info(&outa, "")).unwrap();
        a.store(&stderr);
        assert!(entry.join(MANIFEST).is_file());
        assert!(b.restore());
        assert_eq!(std::fs::read(outb.join("liblib-1.rlib")).unwrap(), b"\x00rlib bytes");
        assert_eq!(std::fs::read_to_string(outb.join("lib-1.d")).unwrap(), dep_info(&outb, ""));
        // A variable the crate read (`env!`) has another value now.
        std::env::set_var("OFFLOAD_TEST_CRATE_CACHE_VAR", "1");
        assert!(!b.restore(), "the crate read a variable that has changed");
        std::env::remove_var("OFFLOAD_TEST_CRATE_CACHE_VAR");
        assert!(b.restore());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
