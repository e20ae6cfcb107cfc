//! Writing files that other processes read: no reader ever sees a partial
//! file, and an unchanged file keeps its modification time.
//!
//! `cargo offload`, its rustc wrapper, the `#[kernel]` macro and
//! `offload-linker` share target directories with concurrent builds (two
//! `cargo offload` commands in one directory, cargo's parallel jobs) and
//! may be interrupted at any point. So every file one of them writes for
//! another (device images, the link cache, image objects, the image map,
//! instantiation lists) is written to a name unique to the writer and
//! renamed into place (`rename(2)` is atomic within a file system), and
//! files that cargo fingerprints by modification time are rewritten only
//! when their bytes change.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of the file at `p`: its canonical path, size and
/// modification time (`<path> <size>:<mtime in ns>`; 0 for what cannot be
/// read). A new install of an executable changes it; caches key tools by
/// it (cargo keys its `rustc -vV` cache the same way).
pub fn identity(p: &Path) -> String {
    let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let m = std::fs::metadata(&p).ok();
    let mtime = m.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    format!("{} {}:{}", p.display(), m.map_or(0, |m| m.len()), mtime.map_or(0, |d| d.as_nanos()))
}

/// A temporary name beside `path`, unique to this process and call:
/// `<name>.<pid>-<n>.tmp`.
pub fn unique_tmp(path: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// Moves the finished temporary file `tmp` to `path`; removes `tmp` if that
/// fails.
fn rename_into_place(tmp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(tmp);
    })
}

/// Writes `data` to `path` through a [`unique_tmp`] file renamed into place.
///
/// # Errors
/// The I/O error of writing the temporary file or of the rename (the
/// temporary file is removed then).
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = unique_tmp(path);
    std::fs::write(&tmp, data).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    rename_into_place(&tmp, path)
}

/// Writes `data` to `path` (creating its directory) unless the file already
/// holds exactly these bytes; returns whether it wrote.
///
/// # Errors
/// As [`write_atomic`], or creating the directory.
pub fn write_if_changed(path: &Path, data: &[u8]) -> io::Result<bool> {
    if std::fs::read(path).ok().as_deref() == Some(data) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(path, data)?;
    Ok(true)
}

/// Copies `from` to `to` through a [`unique_tmp`] file renamed into place.
///
/// # Errors
/// The I/O error of the copy or of the rename.
pub fn copy_atomic(from: &Path, to: &Path) -> io::Result<()> {
    let tmp = unique_tmp(to);
    std::fs::copy(from, &tmp).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    rename_into_place(&tmp, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("offload-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn unchanged_files_are_not_rewritten() {
        let d = dir("changed");
        let p = d.join("sub/x.o");
        assert!(write_if_changed(&p, b"abc").unwrap());
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!write_if_changed(&p, b"abc").unwrap());
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
        assert!(write_if_changed(&p, b"abd").unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"abd");
        assert_eq!(entries(&d.join("sub")), ["x.o"], "no temporary file is left");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn temporary_names_are_unique_and_beside_the_file() {
        let p = Path::new("/t/dir/img.o");
        let (a, b) = (unique_tmp(p), unique_tmp(p));
        assert_ne!(a, b);
        assert_eq!(a.parent(), p.parent());
        assert!(a.file_name().unwrap().to_string_lossy().starts_with(&format!("img.o.{}-", std::process::id())));
    }

    #[test]
    fn failed_writes_leave_nothing() {
        let d = dir("fail");
        std::fs::create_dir_all(d.join("target-is-a-dir")).unwrap();
        // The rename onto a non-empty directory fails; the temporary goes.
        std::fs::write(d.join("target-is-a-dir/keep"), b"").unwrap();
        assert!(write_atomic(&d.join("target-is-a-dir"), b"x").is_err());
        assert_eq!(entries(&d), ["target-is-a-dir"]);
        assert!(copy_atomic(&d.join("missing"), &d.join("out")).is_err());
        assert_eq!(entries(&d), ["target-is-a-dir"]);
        std::fs::write(d.join("src"), b"img").unwrap();
        copy_atomic(&d.join("src"), &d.join("out")).unwrap();
        assert_eq!(std::fs::read(d.join("out")).unwrap(), b"img");
        let _ = std::fs::remove_dir_all(d);
    }
}
