//! The size limit of offload's cache (`<cache>`: `OFFLOAD_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/offload`, else `~/.cache/offload`), as sccache keeps
//! its cache under a size (`SCCACHE_CACHE_SIZE`, least recently used
//! first out) and `cargo clean gc` prunes cargo's own.
//!
//! Entries: each device sysroot (`<cache>/sysroot/<name>/`, `sysroot.rs`)
//! and each crate of the crate cache (`<cache>/crates/<name>/`,
//! `crate_cache.rs`). An entry's last use is the modification time of its
//! marker file (`offload-sysroot.txt`, `offload-crate.json`), set when the
//! entry is written and again on every use ([`touch`]: one `futimens` per
//! hit; access times are not kept by `noatime`/`relatime` mounts).
//!
//! After every `cargo offload` build that was not interrupted (`phases/cargo.rs`) the cache is
//! pruned to [`SIZE_VAR`] (default [`DEFAULT_LIMIT`]) when it is over:
//! entries least recently used first, never one this command used (its
//! last use is after the command started), never one in use ([`prune`]).
//! `cargo offload clean --cache` removes every entry not in use, or with
//! `--max-size` prunes to that size, and says how much it freed.
//!
//! Safety with concurrent `cargo offload`s, by one `flock` per entry,
//! `<name>.lock` beside it ([`lock`]):
//! - whoever assembles an entry (a sysroot build, a crate compiled on a
//!   miss) holds it exclusively, and assembles in `<name>.build` or
//!   `<name>.<pid>-<n>.tmp` renamed into place;
//! - a device pass holds its sysroot's lock shared for as long as its
//!   rustc reads the sysroot (`Sysroot::ensure`);
//! - eviction takes the lock exclusively without waiting and skips the
//!   entry if it cannot (in use, or being assembled); it renames the entry
//!   away (one atomic step), deletes it, then deletes the lock file while
//!   still holding it. [`lock`] checks, once it holds a lock, that the file
//!   it locked is still the one at the path, and else locks again, so a
//!   lock file deleted under a waiter never leaves two holders;
//! - a crate restored from the cache is copied without a lock: if the entry
//!   disappears under the copy, `Slot::restore` reports a miss and the
//!   crate is compiled (the build never fails for it).
//!
//! What the lock frees, besides entries: the leftovers of interrupted
//! builds (`.build`, `.tmp`) and lock files without an entry, once their
//! lock is free. Tool probes (`<cache>/probes`, a few hundred bytes each)
//! are only removed by `clean --cache`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use nix::fcntl::{Flock, FlockArg};

use crate::errors::{CliError, Result};

/// The size limit of the cache, e.g. `2G`, `500M`, `0` (see [`parse_size`]).
pub const SIZE_VAR: &str = "OFFLOAD_CACHE_SIZE";
/// The limit without [`SIZE_VAR`]: 2 GiB, room for a few toolchains'
/// sysroots (about 60 MB each) and the crates of a few dozen projects and
/// profiles (10–50 MB each).
pub const DEFAULT_LIMIT: u64 = 2 << 30;
/// The directories below `<cache>` whose entries are pruned.
const KINDS: &[(&str, &str)] = &[("sysroot", "offload-sysroot.txt"), ("crates", "offload-crate.json")];

/// A size as sccache and `cargo clean gc --max-download-size` write it: a
/// whole number of bytes, optionally followed by `K`, `M`, `G` or `T`
/// (powers of 1024; `KiB`, `MB`, … are read the same) or `B`.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    if num.is_empty() {
        return Err(format!("`{s}` does not start with a whole number"));
    }
    if unit.starts_with('.') {
        return Err(format!("`{s}` has a fraction: write a whole number of a smaller unit, e.g. `1536M` for `1.5G`"));
    }
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is larger than 16 EiB"))?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit.strip_suffix("IB").or_else(|| unit.strip_suffix('B')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        u => return Err(format!("`{s}` has an unknown unit `{u}`: use K, M, G or T")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("`{s}` is larger than 16 EiB"))
}

/// The limit: [`SIZE_VAR`] if set, else [`DEFAULT_LIMIT`].
///
/// # Errors
/// [`CliError::CacheSize`] for a value [`parse_size`] does not read.
pub fn limit() -> Result<u64> {
    match std::env::var(SIZE_VAR) {
        Ok(v) if !v.trim().is_empty() => {
            parse_size(&v).map_err(|problem| CliError::CacheSize { from: SIZE_VAR, problem })
        }
        _ => Ok(DEFAULT_LIMIT),
    }
}

/// The cache directory, refused if something other than a directory is
/// there or above it (a file named by `OFFLOAD_CACHE_DIR`, say, or one of
/// its parents); `None` where no cache
/// directory is known (neither `OFFLOAD_CACHE_DIR` nor `HOME` is set).
///
/// # Errors
/// [`CliError::CacheDir`] if the path exists and is not a directory.
pub fn root() -> Result<Option<PathBuf>> {
    let Some(root) = offload_image::probe::cache_root() else { return Ok(None) };
    // The nearest of the path and its parents that exists must be a
    // directory (a file there makes every directory below it impossible).
    match root.ancestors().find(|p| p.exists()) {
        Some(p) if !p.is_dir() => Err(CliError::CacheDir { path: p.to_path_buf() }),
        _ => Ok(Some(root)),
    }
}

/// `bytes` as cargo prints sizes: `1.5GiB`, `320.0MiB`, `12B`.
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut i) = (bytes as f64, 0);
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes}B")
    } else {
        format!("{v:.1}{}", units[i])
    }
}

/// How [`lock`] locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Shared (readers of a sysroot), waiting while it is held exclusively.
    Shared,
    /// Exclusive, waiting.
    Exclusive,
    /// Exclusive, or `None` at once if anyone holds it.
    TryExclusive,
    /// Shared, or `None` at once if it is held exclusively.
    TryShared,
}

/// Locks `path` (created if missing); `Ok(None)` only for the `Try` kinds
/// when another process holds it. Once locked, the file is checked to be
/// the one at `path` still (eviction deletes a lock file it holds): if not,
/// the lock guards nothing and is taken again on the new file.
///
/// # Errors
/// Creating, opening or locking the file.
pub fn lock(path: &Path, how: How) -> io::Result<Option<Flock<File>>> {
    use std::os::unix::fs::MetadataExt;
    let arg = match how {
        How::Shared => FlockArg::LockShared,
        How::Exclusive => FlockArg::LockExclusive,
        How::TryExclusive => FlockArg::LockExclusiveNonblock,
        How::TryShared => FlockArg::LockSharedNonblock,
    };
    loop {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let held = match Flock::lock(file, arg) {
            Ok(l) => l,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) if matches!(how, How::TryExclusive | How::TryShared) => {
                return Ok(None)
            }
            Err((_, e)) => return Err(io::Error::from(e)),
        };
        let (ours, now) = (held.metadata()?, std::fs::metadata(path));
        if now.is_ok_and(|m| (m.dev(), m.ino()) == (ours.dev(), ours.ino())) {
            return Ok(Some(held));
        }
    }
}

/// Records a use of an entry: its marker file's modification time is now.
pub fn touch(marker: &Path) {
    if let Ok(f) = std::fs::OpenOptions::new().append(true).open(marker) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// One entry of the cache and what belongs to it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `<cache>/<kind>/<name>`; absent for the leftovers of a build that
    /// stored nothing.
    pub dir: PathBuf,
    /// `<dir>.lock`.
    pub lock: PathBuf,
    /// The leftovers beside it: `<name>.build`, `<name>.<pid>-<n>.tmp`.
    pub leftovers: Vec<PathBuf>,
    /// Bytes of every file of the entry and its leftovers.
    pub size: u64,
    /// The marker's modification time; `None` for an incomplete entry
    /// (no marker: leftovers, a lock file alone).
    pub last_use: Option<SystemTime>,
}

/// The name of the entry that the file `name` in a kind's directory
/// belongs to: `x.lock`, `x.build`, `x.<pid>-<n>.tmp` all belong to `x`.
fn entry_name(name: &str) -> &str {
    if let Some(s) = name.strip_suffix(".lock").or_else(|| name.strip_suffix(".build")) {
        return s;
    }
    match name.strip_suffix(".tmp").and_then(|s| s.rsplit_once('.')) {
        Some((stem, tag)) if tag.split_once('-').is_some_and(|(p, n)| is_number(p) && is_number(n)) => stem,
        _ => name,
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Bytes of the files below `p` (links not followed), `p` itself if a file.
pub fn size_of(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else { return 0 };
    if !m.is_dir() {
        return m.len();
    }
    let Ok(rd) = std::fs::read_dir(p) else { return 0 };
    rd.flatten().map(|e| size_of(&e.path())).sum()
}

/// The entries of `<cache>/sysroot` and `<cache>/crates`.
pub fn entries(cache: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    for (kind, marker) in KINDS {
        let dir = cache.join(kind);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut by_name: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            by_name.entry(entry_name(&name).to_string()).or_default().push(e.path());
        }
        for (name, paths) in by_name {
            let main = dir.join(&name);
            let lock = dir.join(format!("{name}.lock"));
            let leftovers: Vec<PathBuf> = paths.into_iter().filter(|p| *p != main && *p != lock).collect();
            let last_use = marker_time(&main, marker);
            let size = size_of(&main) + leftovers.iter().map(|p| size_of(p)).sum::<u64>();
            out.push(Entry { dir: main, lock, leftovers, size, last_use });
        }
    }
    out
}

/// Removes `e` unless its lock is held (in use, or being assembled);
/// returns whether it did. A complete entry whose last use is no longer
/// `last_use` (used since it was listed) is kept too.
pub fn evict(e: &Entry) -> bool {
    let Ok(Some(held)) = lock(&e.lock, How::TryExclusive) else { return false };
    if e.last_use.is_some() && e.last_use != entries_last_use(&e.dir) {
        return false;
    }
    // One atomic step out of readers' sight; a crash after it leaves a
    // `.tmp` leftover, removed next time.
    let trash = offload_image::file::unique_tmp(&e.dir);
    if e.dir.exists() && std::fs::rename(&e.dir, &trash).is_err() {
        return false;
    }
    // A stray plain file where an entry would be is removed the same way.
    let _ = std::fs::remove_dir_all(&trash).or_else(|_| std::fs::remove_file(&trash));
    for p in &e.leftovers {
        let _ = std::fs::remove_dir_all(p).or_else(|_| std::fs::remove_file(p));
    }
    let _ = std::fs::remove_file(&e.lock);
    drop(held);
    true
}

/// The latest modification time of an incomplete entry's leftovers and
/// lock file (of each path itself, not of what is below it).
fn newest(e: &Entry) -> Option<SystemTime> {
    e.leftovers
        .iter()
        .chain([&e.lock])
        .filter_map(|p| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok())
        .max()
}

/// The last use of the entry at `dir`, read again (see [`Entry::last_use`]).
fn entries_last_use(dir: &Path) -> Option<SystemTime> {
    KINDS.iter().find_map(|(_, marker)| marker_time(dir, marker))
}

/// The modification time of the marker file `marker` of the entry at `dir`.
fn marker_time(dir: &Path, marker: &str) -> Option<SystemTime> {
    std::fs::metadata(dir.join(marker)).and_then(|m| m.modified()).ok()
}

/// What [`prune`] did (or, dry, would do).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// Entries removed (complete ones; leftovers are counted in `freed`).
    pub removed: Vec<PathBuf>,
    /// Bytes removed, leftovers included.
    pub freed: u64,
    /// Entries over the limit kept because another process holds them.
    pub in_use: usize,
    /// Bytes left in the pruned directories.
    pub left: u64,
}

/// Prunes `<cache>` to `limit` bytes: first the leftovers and lock files
/// of entries nobody holds (none written at or after `keep_since`), then complete entries least recently used
/// first while the total is over `limit`, none used at or after
/// `keep_since` (the current command's), none in use ([`evict`]). `dry`:
/// nothing is removed, and what would be is returned (locks not tried).
pub fn prune(cache: &Path, limit: u64, keep_since: SystemTime, dry: bool) -> Pruned {
    let mut list = entries(cache);
    let mut p = Pruned { left: list.iter().map(|e| e.size).sum(), ..Pruned::default() };
    let (complete, incomplete): (Vec<Entry>, Vec<Entry>) = list.drain(..).partition(|e| e.last_use.is_some());
    // A leftover written since `keep_since` may be this command's own: a
    // failed sysroot build kept for the user to look at (its error names
    // it), or a store another build is finishing.
    for e in incomplete.iter().filter(|e| newest(e).is_none_or(|t| t < keep_since)) {
        if dry || evict(e) {
            (p.freed, p.left) = (p.freed + e.size, p.left - e.size);
        }
    }
    let mut complete = complete;
    complete.sort_by_key(|e| e.last_use);
    for e in &complete {
        if p.left <= limit || e.last_use.is_some_and(|t| t >= keep_since) {
            break;
        }
        if !dry && !evict(e) {
            p.in_use += 1;
            continue;
        }
        (p.freed, p.left) = (p.freed + e.size, p.left - e.size);
        p.removed.push(e.dir.clone());
    }
    p
}

/// After a build: prunes the cache to [`limit`] if it is over, keeping what
/// this command (started at `started`) used, with a status line when it
/// removed something. Errors are left out: the build's result stands.
pub fn after_build(started: SystemTime) {
    let (Some(cache), Ok(limit)) = (offload_image::probe::cache_root(), limit()) else { return };
    let p = prune(&cache, limit, started, false);
    if !p.removed.is_empty() {
        crate::status::status(
            "Pruned",
            format!(
                "offload's cache to {} of {} ({SIZE_VAR}): removed {} least recently used {}, {}",
                human(p.left),
                human(limit),
                p.removed.len(),
                entries_word(p.removed.len()),
                human(p.freed)
            ),
        );
    }
}

fn entries_word(n: usize) -> &'static str {
    if n == 1 {
        "entry"
    } else {
        "entries"
    }
}

/// `cargo offload clean --cache [--max-size SIZE] [--dry-run]`: prunes the
/// cache to `max_size` (every entry not in use without it), and with no
/// size also deletes the tool probes; prints what it freed.
///
/// # Errors
/// [`CliError::CacheSize`] for a `max_size` [`parse_size`] does not read.
pub fn clean(max_size: Option<&str>, dry: bool) -> Result<i32> {
    let limit =
        max_size.map(parse_size).transpose().map_err(|problem| CliError::CacheSize { from: "--max-size", problem })?;
    let Some(cache) = root()? else {
        crate::status::status("Removed", "nothing: no cache directory (neither OFFLOAD_CACHE_DIR nor HOME is set)");
        return Ok(crate::errors::exit::OK);
    };
    let mut p = prune(&cache, limit.unwrap_or(0), SystemTime::now(), dry);
    let probes = cache.join("probes");
    if limit.is_none() && probes.is_dir() {
        let size = size_of(&probes);
        if dry || std::fs::remove_dir_all(&probes).is_ok() {
            p.freed += size;
        }
    }
    if dry {
        for d in &p.removed {
            println!("{}", d.display());
        }
    }
    let verb = if dry { "Would remove" } else { "Removed" };
    let n = p.removed.len();
    let mut msg = if n == 0 && p.freed > 0 {
        // Only what is not an entry went: say what, not "0 entries, N bytes".
        format!(
            "no entries; {} of leftovers (interrupted builds, probe results) from {}",
            human(p.freed),
            cache.display()
        )
    } else {
        format!("{n} {}, {} total, from {}", entries_word(n), human(p.freed), cache.display())
    };
    if p.in_use > 0 {
        msg.push_str(&format!("; kept {} in use by a running cargo offload", p.in_use));
    }
    crate::status::status(verb, msg);
    Ok(crate::errors::exit::OK)
}

#[cfg(test)]
mod tests;
