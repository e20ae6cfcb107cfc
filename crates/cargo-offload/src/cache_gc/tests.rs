use std::time::Duration;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("offload-cache-gc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An entry of `kind` (`crates` or `sysroot`) holding `bytes` bytes, last
/// used `ago` before now, with its lock file as a build leaves it.
fn entry(cache: &Path, kind: &str, name: &str, bytes: usize, ago: Duration) -> PathBuf {
    let marker = KINDS.iter().find(|(k, _)| *k == kind).unwrap().1;
    let dir = cache.join(kind).join(name);
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(dir.join("lib/data.rlib"), vec![7u8; bytes]).unwrap();
    std::fs::write(dir.join(marker), b"").unwrap();
    let f = std::fs::OpenOptions::new().append(true).open(dir.join(marker)).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
    std::fs::write(dir.with_extension("lock"), b"").unwrap();
    dir
}

fn min(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}

#[test]
fn sizes_as_sccache_writes_them() {
    let table: &[(&str, u64)] = &[
        ("0", 0),
        ("4096", 4096),
        ("2G", 2 << 30),
        ("500M", 500 << 20),
        ("500MiB", 500 << 20),
        ("10 kb", 10 << 10),
        ("1T", 1 << 40),
        ("12B", 12),
    ];
    for (s, n) in table {
        assert_eq!(parse_size(s), Ok(*n), "{s}");
    }
    for bad in ["", "G", "1.5G", "-1G", "10X", "99999999999T"] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
    // Each refusal says what is wrong with the value.
    let says = |s: &str, what: &str| {
        let e = parse_size(s).unwrap_err();
        assert!(e.contains(what), "{s}: {e}");
    };
    says("1.5G", "`1536M`");
    says("18446744073709551616", "larger than 16 EiB");
    says("99999999999999999999999G", "larger than 16 EiB");
    says("-5", "does not start with a whole number");
    assert_eq!(
        (human(12), human(1536), human(320 << 20), human(3 << 29)),
        ("12B".into(), "1.5KiB".into(), "320.0MiB".into(), "1.5GiB".into())
    );
    std::env::set_var(SIZE_VAR, "1X");
    let e = limit().unwrap_err();
    assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
    assert!(e.to_string().starts_with("OFFLOAD_CACHE_SIZE: `1X` has an unknown unit"), "{e}");
    std::env::set_var(SIZE_VAR, "");
    assert_eq!(limit().unwrap(), DEFAULT_LIMIT, "empty is unset");
    std::env::remove_var(SIZE_VAR);
}

#[test]
fn files_belong_to_their_entry() {
    for (file, name) in [
        ("serde-0123abcd", "serde-0123abcd"),
        ("serde-0123abcd.lock", "serde-0123abcd"),
        ("nvptx64-nvidia-cuda-sm_90-ad9f.build", "nvptx64-nvidia-cuda-sm_90-ad9f"),
        ("serde-0123abcd.4242-7.tmp", "serde-0123abcd"),
        ("odd.tmp", "odd.tmp"),
        ("odd.x-1.tmp", "odd.x-1.tmp"),
    ] {
        assert_eq!(entry_name(file), name, "{file}");
    }
}

/// Over the limit, the least recently used entries go first, of both
/// kinds, until the cache is under it; the rest stay, locks included.
#[test]
fn over_the_limit_the_oldest_go_until_it_fits() {
    let cache = scratch("lru");
    let a = entry(&cache, "crates", "a-1", 1000, min(50));
    let s = entry(&cache, "sysroot", "nvptx64-nvidia-cuda-sm_90-1", 1000, min(40));
    let b = entry(&cache, "crates", "b-1", 1000, min(30));
    let c = entry(&cache, "crates", "c-1", 1000, min(20));
    let d = entry(&cache, "crates", "d-1", 1000, min(10));
    let total: u64 = entries(&cache).iter().map(|e| e.size).sum();
    assert_eq!(total, 5000);
    let dry = prune(&cache, 2500, SystemTime::now(), true);
    assert_eq!(dry.removed, [a.clone(), s.clone(), b.clone()], "oldest first");
    assert!(a.exists(), "a dry run removes nothing");
    let p = prune(&cache, 2500, SystemTime::now(), false);
    assert_eq!((p.removed, p.freed, p.left, p.in_use), (vec![a.clone(), s.clone(), b.clone()], 3000, 2000, 0));
    for gone in [&a, &s, &b] {
        assert!(!gone.exists() && !gone.with_extension("lock").exists(), "{}", gone.display());
    }
    for kept in [&c, &d] {
        assert!(kept.join("lib/data.rlib").is_file() && kept.with_extension("lock").exists());
    }
    assert_eq!(prune(&cache, 2500, SystemTime::now(), false).removed, Vec::<PathBuf>::new(), "under the limit");
    let _ = std::fs::remove_dir_all(&cache);
}

/// An entry another process holds (a device pass reading its sysroot, a
/// build filling it) and one this command used are never removed, even
/// over the limit; a use recorded after listing keeps the entry too.
#[test]
fn in_use_and_fresh_entries_survive() {
    let cache = scratch("in-use");
    let sys = entry(&cache, "sysroot", "nvptx64-nvidia-cuda-sm_80-1", 1000, min(30));
    let old = entry(&cache, "crates", "old-1", 1000, min(20));
    let fresh = entry(&cache, "crates", "fresh-1", 1000, Duration::ZERO);
    let started = SystemTime::now() - min(1);
    let reader = lock(&sys.with_extension("lock"), How::Shared).unwrap().unwrap();
    let p = prune(&cache, 0, started, false);
    assert_eq!((p.removed, p.in_use, p.left), (vec![old.clone()], 1, 2000));
    assert!(sys.join("lib/data.rlib").is_file(), "in use");
    assert!(fresh.is_dir(), "used by this command");
    drop(reader);
    // Used by another build between the listing and the eviction.
    let listed = entries(&cache).into_iter().find(|e| e.dir == sys).unwrap();
    touch(&sys.join("offload-sysroot.txt"));
    assert!(!evict(&listed), "used since it was listed");
    assert!(sys.is_dir());
    let p = prune(&cache, 0, started, false);
    assert_eq!(p.removed, Vec::<PathBuf>::new(), "its last use is now after `started`");
    let last = prune(&cache, 0, SystemTime::now() + min(1), false).removed;
    assert_eq!(last, [fresh.clone(), sys.clone()], "least recently used first: the touch came last");
    let _ = std::fs::remove_dir_all(&cache);
}

/// What interrupted builds leave (`.build`, `.tmp`, a lock file alone)
/// is removed first, whatever the limit, unless its lock is held.
#[test]
fn leftovers_of_interrupted_builds_go_unless_held() {
    let cache = scratch("leftovers");
    let kept = entry(&cache, "crates", "kept-1", 100, min(5));
    let crates = cache.join("crates");
    std::fs::create_dir_all(crates.join("x-1.4242-0.tmp")).unwrap();
    std::fs::write(crates.join("x-1.4242-0.tmp/liba.rlib"), [0u8; 300]).unwrap();
    std::fs::write(crates.join("y-1.lock"), b"").unwrap();
    let sysroot = cache.join("sysroot");
    std::fs::create_dir_all(sysroot.join("nv-sm_90-2.build/target")).unwrap();
    std::fs::write(sysroot.join("nv-sm_90-2.build/target/core.rlib"), [0u8; 500]).unwrap();
    std::fs::create_dir_all(sysroot.join("nv-sm_90-3.build")).unwrap();
    std::fs::write(sysroot.join("nv-sm_90-3.build/core.rlib"), [0u8; 50]).unwrap();
    let building = lock(&sysroot.join("nv-sm_90-3.lock"), How::Exclusive).unwrap().unwrap();
    let started = SystemTime::now() - min(1);
    let p = prune(&cache, u64::MAX, started, false);
    assert_eq!(p.freed, 0, "written since the command started: a failed build's, kept for the user");
    let p = prune(&cache, u64::MAX, SystemTime::now(), false);
    assert_eq!((p.freed, p.left, p.removed.len()), (800, 150, 0));
    for gone in ["crates/x-1.4242-0.tmp", "crates/y-1.lock", "sysroot/nv-sm_90-2.build"] {
        assert!(!cache.join(gone).exists(), "{gone}");
    }
    assert!(sysroot.join("nv-sm_90-3.build/core.rlib").is_file(), "a build holds its lock");
    assert!(kept.is_dir() && kept.with_extension("lock").exists());
    drop(building);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A process waiting for a lock whose file eviction deletes ends up
/// holding the lock of the file at the path, not of the deleted one: a
/// third process cannot take it meanwhile.
#[test]
fn a_lock_file_deleted_under_a_waiter_is_locked_again() {
    let dir = scratch("lock");
    let path = dir.join("e.lock");
    let evictor = lock(&path, How::Exclusive).unwrap().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    let waiter = std::thread::spawn(move || {
        let held = lock(&p, How::Exclusive).unwrap().unwrap();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
    });
    std::thread::sleep(Duration::from_millis(200));
    std::fs::remove_file(&path).unwrap();
    drop(evictor);
    rx.recv().unwrap();
    assert!(lock(&path, How::TryExclusive).unwrap().is_none(), "the waiter holds the lock at the path");
    waiter.join().unwrap();
    assert!(lock(&path, How::TryExclusive).unwrap().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stray plain file where an entry would be goes like an entry (it was
/// renamed to a `.tmp` and left until the next clean).
#[test]
fn a_stray_file_among_the_entries_is_removed() {
    let cache = scratch("stray");
    std::fs::create_dir_all(cache.join("crates")).unwrap();
    std::fs::write(cache.join("crates/junkfile"), b"junk").unwrap();
    prune(&cache, 0, SystemTime::now(), false);
    let left: Vec<_> = std::fs::read_dir(cache.join("crates")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left: {left:?}");
}
