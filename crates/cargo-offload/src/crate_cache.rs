//! The crate cache: what every new target directory compiles and that does
//! not depend on the project, compiled once and copied into each new
//! project's target directories (sccache's model, for the crates it can
//! trust). Both passes use it:
//!
//! - the device pass (`phases/rustc_device.rs`): the `offload` crate and
//!   its libraries for the GPU, and the proc macros and build scripts they
//!   need, compiled by the device rustc for the host;
//! - the host pass (`phases/rustc_dep.rs`): the dependencies outside the
//!   workspace (offload, cudarc, rayon, thiserror, … and their proc macros
//!   and build scripts), compiled by the host rustc as a plain `cargo
//!   build` compiles them. cargo runs cargo-offload as `RUSTC_WRAPPER` for
//!   them (`host.rs`), unless the user has a `RUSTC_WRAPPER` of their own
//!   (sccache, say), which then keeps the host pass's dependencies.
//!
//! One key, one layout and one store for both: an entry is shared when the
//! keys agree (the same rustc, arguments and environment).
//!
//! Which crates: those whose sources cannot change under the same name —
//! a crate from a registry (its root file under `$CARGO_HOME/registry/src`,
//! unpacked from a checksummed `.crate`) or one of offload's own packages
//! used by path (a clone's `crates/offload`, `offload-macros`,
//! `offload-image`), whose files the cargo phase hashes
//! ([`own_sources`]). Not the user's crates, nor a crate compiled
//! incrementally.
//!
//! The key ([`key`]) hashes ([`offload_image::hash`]): the rustc (path,
//! `rustc -vV`, size and modification time), for offload's own packages
//! the hash of their files, rustc's working directory and arguments, and
//! the environment cargo sets for rustc (`CARGO_PKG_*`, `OUT_DIR`, …),
//! every path below the pass's target directory written as a placeholder.
//! The arguments carry `-C metadata` (cargo's hash of the package, its
//! version, features, profile and dependencies), every `--cfg` (features,
//! and what build scripts print), the edition, `-C opt-level`/`debuginfo`
//! and the other profile flags, the `--extern` names and files (whose
//! names carry the dependencies' own `-C metadata`), and the device flags;
//! besides the arguments, the bytes of each `--extern` file
//! ([`extern_hashes`]), so that a crate is only ever restored beside the
//! very dependencies it was compiled against.
//! The device pass knows its rustc's identity ([`RUSTC_VAR`]); the host
//! pass's wrapper asks the rustc cargo gives it, once per build
//! ([`HOST_VAR`]).
//!
//! Layout: `<cache>/crates/<crate>-<key>/` holds the files rustc wrote
//! (those its `{"artifact":…}` messages name: `.rlib`, `.rmeta`, `.so`,
//! build script executables, the dep-info `.d`) and `offload-crate.json`
//! (rustc's stderr, to replay, the environment variables its dep-info says
//! the crate read, with their values, and the generated files it read). `<cache>` is the sysroot's
//! (`OFFLOAD_CACHE_DIR`, …, see `sysroot.rs`). An entry is stored only if
//! rustc succeeded and every source file its dep-info names is one the key
//! covers or one in the target directory: a file a build script generated
//! in `OUT_DIR` for `include!` (thiserror's `private.rs`). Those are
//! recorded with their content hash, and an entry whose files differ in
//! this project is not restored (the crate is compiled, and its entry
//! replaced). Such a crate's restored output names the first project's
//! `OUT_DIR` in its debug information (`file!()` in the generated file,
//! too). Text (the dep-info, stderr) has the target directory replaced by
//! a placeholder, restored on a hit, so that cargo reads a dep-info of this
//! project and sees the crate as fresh; binary files are copied as they
//! are.
//!
//! Concurrent builds: a compile that misses holds `<entry>.lock` (`flock`)
//! while it compiles and stores, so a second build waiting for the same
//! crate takes the first one's result; an entry is assembled in a
//! temporary directory renamed into place, so an interrupted build leaves
//! nothing a later one would read. An entry that disappears while it is
//! restored (pruned by another `cargo offload`, `cache_gc`) is a miss: the
//! crate is compiled. A hit sets the manifest's modification time, the
//! entry's last use for pruning. `OFFLOAD_CRATE_CACHE=0`
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
/// The host pass: cargo-offload is its `RUSTC_WRAPPER` too, and the host
/// rustc's identity is kept in this directory for the build (one file per
/// rustc path, [`host_identity`]).
pub const HOST_VAR: &str = "__OFFLOAD_CRATE_CACHE_HOST";
/// ... the pass's target directory, written as a placeholder in keys and entries.
pub const TARGET_DIR_VAR: &str = "__OFFLOAD_CRATE_CACHE_TARGET_DIR";
/// ... offload's own packages used by path: `<hash>` then each package
/// directory, separated by `\x1f` ([`own_sources`]).
pub const OWN_VAR: &str = "__OFFLOAD_OWN_SOURCES";

/// Version of the entries' format and of what the key covers.
const RECIPE: &str = "offload-crate-cache 2";
/// Stands for the pass's target directory in keys and stored text.
const PLACEHOLDER: &str = "@OFFLOAD_TARGET_DIR@";
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

/// `<cache>/crates` (`sysroot::cache_root`) when the cache is [`enabled`].
pub fn dir() -> Option<PathBuf> {
    enabled().then(crate::sysroot::cache_root).flatten().map(|c| c.join("crates"))
}

/// What a rustc is: its path, `rustc -vV` (`version`), and the
/// executable's size and modification time.
pub fn toolchain_identity(rustc: &Path, version: &str) -> String {
    format!("{} {version} {}", rustc.display(), crate::sysroot::file_identity(rustc))
}

/// The [`toolchain_identity`] of the host pass's `rustc` (the path cargo
/// runs), from `<memo>/<hash of the path>` if an earlier compilation of
/// this build asked (`memo`: the [`HOST_VAR`] directory, which lives as
/// long as one host cargo, so that an upgraded toolchain behind the same
/// path is asked again next time), else from the first line of `rustc -vV`; `None` if rustc
/// does not answer.
pub fn host_identity(rustc: &str, memo: &Path) -> Option<String> {
    let file = memo.join(format!("{:016x}", offload_image::hash::fnv64(rustc.as_bytes())));
    if let Ok(id) = std::fs::read_to_string(&file) {
        return Some(id);
    }
    let out = std::process::Command::new(rustc).arg("-vV").output().ok().filter(|o| o.status.success())?;
    // The first line, as the device toolchain's (`toolchain.rs`): the same
    // rustc gets the same identity in both passes.
    let version = String::from_utf8(out.stdout).ok()?.lines().next()?.to_string();
    let id = toolchain_identity(Path::new(rustc), &version);
    let _ = std::fs::create_dir_all(memo);
    let _ = offload_image::file::write_atomic(&file, id.as_bytes());
    Some(id)
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

/// Whether `path` is below `root` and not in a part [`own_sources`] skips
/// (`..` is resolved first: libc's dep-info names
/// `src/new/glibc/sysdeps/nptl/bits/../../x86/nptl/bits/struct_mutex.rs`).
fn covered(root: &Path, path: &Path) -> bool {
    let path = lexical(path);
    let Ok(rel) = path.strip_prefix(root) else { return false };
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy());
    parts.clone().next().is_none_or(|c| c != "target") && !parts.any(|c| c.starts_with('.'))
}

/// `path` with `.` and `..` resolved by its text alone (as rustc wrote it;
/// no link is followed).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
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
    /// The content hash of each `--extern` file ([`extern_hashes`]).
    pub externs: Vec<String>,
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
    parts.extend(k.externs.iter().cloned());
    parts.extend(k.env.iter().map(|(name, v)| format!("{name}={}", n(v))));
    offload_image::hash::fnv64_parts(&parts)
}

/// The content hash of each `--extern` file in `argv` (for a `.rlib`, of
/// its `.rmeta` beside it, which holds what dependents read): cargo's file
/// names say which package, version, features and profile, not which
/// bytes. A dependency the cache does not keep (compiled in each project,
/// its output holding that project's paths) differs from one project to
/// the next; rustc refuses a crate compiled against other bytes of it
/// ("can't find crate"). With `memo` (the host pass's [`HOST_VAR`]), each
/// file is read once per build. `None` if one cannot be read.
pub fn extern_hashes(argv: &[String], memo: Option<&Path>) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let spec = match a.strip_prefix("--extern") {
            Some("") => it.next().map(String::as_str).unwrap_or_default(),
            Some(rest) => match rest.strip_prefix('=') {
                Some(spec) => spec,
                None => continue,
            },
            None => continue,
        };
        let Some((_, path)) = spec.split_once('=') else { continue };
        out.push(content_hash(Path::new(path), memo)?);
    }
    Some(out)
}

/// [`extern_hashes`] of one file: memoized under `memo` by path, size and
/// modification time.
fn content_hash(path: &Path, memo: Option<&Path>) -> Option<String> {
    let rmeta = path.with_extension("rmeta");
    let path = if path.extension().is_some_and(|e| e == "rlib") && rmeta.is_file() { rmeta.as_path() } else { path };
    let memo_file = memo.map(|m| {
        let id = crate::sysroot::file_identity(path);
        m.join(format!("extern-{:016x}", offload_image::hash::fnv64(id.as_bytes())))
    });
    if let Some(h) = memo_file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()) {
        return Some(h);
    }
    let hash = format!("{:016x}", offload_image::hash::fnv64(&std::fs::read(path).ok()?));
    if let Some(f) = &memo_file {
        let _ = std::fs::create_dir_all(f.parent()?);
        let _ = offload_image::file::write_atomic(f, hash.as_bytes());
    }
    Some(hash)
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
    /// Their sizes in bytes, in the same order: an entry whose file was cut
    /// short since (a full disk, a hand edit) is not restored but compiled
    /// again and replaced. Absent in entries of older versions, which are
    /// replaced the same way.
    #[serde(default)]
    sizes: Vec<u64>,
    /// rustc's stderr lines, target directory as the placeholder.
    stderr: Vec<String>,
    /// The environment variables the crate read (its dep-info's `env-dep`
    /// lines) and their values then (normalized; `None`: unset).
    env_deps: EnvDeps,
    /// The files in the target directory the crate read (its dep-info
    /// names them: what a build script wrote to `OUT_DIR` for `include!`),
    /// normalized, and the content hash they had.
    generated: Generated,
}

/// The environment variables a crate read, with their values (`None`: unset).
type EnvDeps = Vec<(String, Option<String>)>;
/// The files a crate read in the target directory (normalized), with their
/// content hashes.
type Generated = Vec<(String, String)>;

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

/// What [`Slot::serve`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The files (and rustc's messages) came from the entry.
    Restored,
    /// rustc ran; its exit code.
    Compiled(i32),
}

impl Slot {
    /// The slot of a compilation (`rustc`: the path cargo runs, `args`:
    /// cargo's arguments, `argv`: those rustc gets), if the cargo phase
    /// turned the cache on for this pass and the crate is one it keeps (see
    /// the module docs).
    pub fn new(rustc: &str, args: &Args, argv: &[String]) -> Option<Slot> {
        let cache = std::env::var_os(DIR_VAR).filter(|d| !d.is_empty())?;
        let target_dir = std::env::var(TARGET_DIR_VAR).ok().filter(|t| !t.is_empty())?;
        let (out_dir, name) = (args.flag_value("--out-dir")?, args.crate_name()?);
        let src = Path::new(args.source_file()?);
        if !src.is_absolute() {
            return None;
        }
        let (sources, roots) = sources_of(src, std::env::var(OWN_VAR).ok().as_deref())?;
        let memo = std::env::var_os(HOST_VAR).filter(|d| !d.is_empty()).map(PathBuf::from);
        let rustc = match std::env::var(RUSTC_VAR).ok().filter(|r| !r.is_empty()) {
            Some(id) => id,
            None => host_identity(rustc, memo.as_deref()?)?,
        };
        let externs = extern_hashes(argv, memo.as_deref())?;
        // cargo compiles path dependencies incrementally; a compilation
        // shared by every project gains nothing from it.
        let argv = without_incremental(argv);
        let cwd = std::env::current_dir().ok()?.display().to_string();
        let inputs = KeyInputs { rustc, sources, target_dir: target_dir.clone(), cwd, argv, externs, env: key_env() };
        let entry = Path::new(&cache).join(format!("{name}-{:016x}", key(&inputs)));
        Some(Slot { entry, out_dir: PathBuf::from(out_dir), target_dir, roots, argv: inputs.argv })
    }

    /// The crate from the entry ([`Served::Restored`]), or else compiled by
    /// `compile` (given the arguments to compile with: `argv` less `-C
    /// incremental`; it returns rustc's exit code and, to store, its stderr
    /// lines) and stored if it succeeded. A build that misses holds the
    /// entry's lock while it compiles, so that a second build waiting for
    /// the same crate restores the first one's result.
    pub fn serve<E>(
        &self,
        compile: impl FnOnce(&[String]) -> Result<(i32, Option<Vec<String>>), E>,
    ) -> Result<Served, E> {
        if self.restore() {
            return Ok(Served::Restored);
        }
        let _lock = self.lock();
        if self.restore() {
            return Ok(Served::Restored);
        }
        let (code, stderr) = compile(&self.argv)?;
        if let (0, Some(stderr)) = (code, stderr) {
            self.store(&stderr);
        }
        Ok(Served::Compiled(code))
    }

    /// Takes `<entry>.lock` (waiting while another build holds it).
    fn lock(&self) -> Option<nix::fcntl::Flock<File>> {
        std::fs::create_dir_all(self.entry.parent()?).ok()?;
        crate::cache_gc::lock(&self.entry.with_extension("lock"), crate::cache_gc::How::Exclusive).ok()?
    }

    /// On a hit, writes the entry's files into rustc's `--out-dir` and its
    /// stderr to this process's (to cargo), as rustc would have; `false`
    /// if there is no entry, it does not apply (a variable the crate reads
    /// has changed), a file is not the size it was stored with, or it
    /// could not be copied.
    fn restore(&self) -> bool {
        let Ok(text) = std::fs::read(self.entry.join(MANIFEST)) else { return false };
        let Ok(m) = serde_json::from_slice::<Manifest>(&text) else { return false };
        if m.env_deps.iter().any(|(k, v)| self.env_value(k) != *v) {
            return false;
        }
        let size = |f: &String| std::fs::metadata(self.entry.join(f)).map(|m| m.len()).ok();
        if m.sizes.len() != m.files.len() || m.files.iter().zip(&m.sizes).any(|(f, &n)| size(f) != Some(n)) {
            return false;
        }
        let denormalize = |p: &str| PathBuf::from(p.replace(PLACEHOLDER, &self.target_dir));
        if m.generated.iter().any(|(p, h)| file_hash(&denormalize(p)).as_ref() != Some(h)) {
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
        crate::cache_gc::touch(&self.entry.join(MANIFEST));
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
    fn store(&self, stderr: &[String]) {
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
        let (env_deps, generated) = self.check_dep_info(&std::fs::read_to_string(dep_info).ok()?)?;
        std::fs::create_dir_all(tmp).ok()?;
        let (mut files, mut sizes) = (Vec::new(), Vec::new());
        for a in &artifacts {
            (a.parent()? == self.out_dir).then_some(())?;
            let name = a.file_name()?.to_str()?.to_string();
            if a == dep_info {
                let text = normalize(&std::fs::read_to_string(a).ok()?, &self.target_dir);
                std::fs::write(tmp.join(&name), text).ok()?;
            } else {
                std::fs::copy(a, tmp.join(&name)).ok()?;
            }
            sizes.push(std::fs::metadata(tmp.join(&name)).ok()?.len());
            files.push(name);
        }
        let stderr = stderr.iter().map(|l| normalize(l, &self.target_dir)).collect();
        let manifest = serde_json::to_vec_pretty(&Manifest { files, sizes, stderr, env_deps, generated }).ok()?;
        std::fs::write(tmp.join(MANIFEST), manifest).ok()?;
        // Under the lock: nobody else renames to the entry. An entry that
        // did not apply (see `restore`) is replaced.
        let _ = std::fs::remove_dir_all(&self.entry);
        std::fs::rename(tmp, &self.entry).ok()
    }

    /// The environment variables a dep-info file says the crate read, with
    /// their values, and the files it read in the target directory, with
    /// their content hashes; `None` if it names a source file that is
    /// neither covered by the key nor in the target directory.
    fn check_dep_info(&self, dep_info: &str) -> Option<(EnvDeps, Generated)> {
        let mut generated = Vec::new();
        for d in crate::host_only::first_rule_deps(dep_info) {
            let path = Path::new(&d);
            if self.roots.iter().any(|r| covered(r, path)) {
                continue;
            }
            if !lexical(path).starts_with(&self.target_dir) {
                return None;
            }
            generated.push((normalize(&d, &self.target_dir), file_hash(path)?));
        }
        let names = dep_info.lines().filter_map(|l| l.strip_prefix("# env-dep:"));
        let env_deps = names
            .map(|l| l.split_once('=').map_or(l, |(k, _)| k))
            .map(|k| (k.to_string(), self.env_value(k)))
            .collect();
        Some((env_deps, generated))
    }
}

/// The content hash of a file a crate read in the target directory.
fn file_hash(path: &Path) -> Option<String> {
    Some(format!("{:016x}", offload_image::hash::fnv64(&std::fs::read(path).ok()?)))
}

#[cfg(test)]
mod tests;
