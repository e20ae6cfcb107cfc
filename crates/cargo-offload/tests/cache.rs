//! offload's shared cache from the user's side: `cargo offload clean
//! --cache` and its report, `OFFLOAD_CACHE_SIZE`, and builds that succeed
//! while another `cargo offload` empties the cache under them.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::*;

/// A cache of its own for one test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An entry of `kind` (`crates`, `sysroot`) of `bytes` bytes, last used `ago`.
fn entry(cache: &Path, kind: &str, name: &str, bytes: usize, ago: Duration) -> PathBuf {
    let marker = if kind == "sysroot" { "offload-sysroot.txt" } else { "offload-crate.json" };
    let dir = cache.join(kind).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rlib"), vec![1u8; bytes]).unwrap();
    std::fs::write(dir.join(marker), b"").unwrap();
    let f = std::fs::OpenOptions::new().append(true).open(dir.join(marker)).unwrap();
    f.set_modified(SystemTime::now() - ago).unwrap();
    std::fs::write(cache.join(kind).join(format!("{name}.lock")), b"").unwrap();
    dir
}

fn clean(cache: &Path, args: &[&str]) -> Output {
    let mut all = vec!["clean", "--cache"];
    all.extend(args);
    offload_cmd(cache, &all, &[(CACHE_VAR, cache.to_str().unwrap())])
}

#[test]
fn clean_cache_says_what_it_freed() {
    let cache = scratch("clean");
    let old = entry(&cache, "sysroot", "nvptx64-nvidia-cuda-sm_80-1", 3 << 20, Duration::from_secs(7200));
    let new = entry(&cache, "crates", "serde-1", 1 << 20, Duration::from_secs(60));
    std::fs::create_dir_all(cache.join("probes")).unwrap();
    std::fs::write(cache.join("probes/0123"), [0u8; 1024]).unwrap();

    let dry = clean(&cache, &["--dry-run"]);
    dry.assert_success();
    assert_eq!(dry.stdout.lines().collect::<Vec<_>>(), [old.to_str().unwrap(), new.to_str().unwrap()], "oldest first");
    assert!(dry.stderr.contains("Would remove 2 entries, 4.0MiB total"), "{}", dry.stderr);
    assert!(old.is_dir() && new.is_dir() && cache.join("probes/0123").is_file(), "a dry run removes nothing");

    let some = clean(&cache, &["--max-size", "2M"]);
    some.assert_success();
    assert!(some.stderr.contains("Removed 1 entry, 3.0MiB total"), "{}", some.stderr);
    assert!(!old.exists() && new.is_dir() && cache.join("probes/0123").is_file());

    let all = clean(&cache, &[]);
    all.assert_success();
    assert!(all.stderr.contains("Removed 1 entry, 1.0MiB total"), "the entry and the probes: {}", all.stderr);
    assert!(!new.exists() && !cache.join("probes").exists());

    // Only what is not an entry: said so, not "0 entries, 1.0KiB".
    std::fs::create_dir_all(cache.join("probes")).unwrap();
    std::fs::write(cache.join("probes/4567"), [0u8; 1024]).unwrap();
    let rest = clean(&cache, &[]);
    rest.assert_success();
    assert!(rest.stderr.contains("Removed no entries; 1.0KiB of leftovers"), "{}", rest.stderr);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn sizes_that_do_not_read_are_usage_errors() {
    let cache = scratch("bad-size");
    let out = clean(&cache, &["--max-size", "lots"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--max-size: `lots` does not start with a whole number"), "{}", out.stderr);
    let out = offload_cmd(&cache, &["build", "--dry-run"], &[("OFFLOAD_CACHE_SIZE", "2 gigs")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("OFFLOAD_CACHE_SIZE: `2 gigs` has an unknown unit `GIGS`"), "{}", out.stderr);
    assert!(out.stderr.contains("write a size such as `2G`"), "{}", out.stderr);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn a_cache_dir_that_is_a_file_is_a_usage_error() {
    let dir = scratch("cache-file");
    let file = dir.join("not-a-dir");
    std::fs::write(&file, b"mine").unwrap();
    for args in [&["clean", "--cache"][..], &["build", "--dry-run"]] {
        let out = offload_cmd(&dir, args, &[(CACHE_VAR, file.to_str().unwrap())]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("the offload cache `{}` is not a directory", file.display())),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("point OFFLOAD_CACHE_DIR at a directory"), "{}", out.stderr);
    }
    // A file above it: the same error, naming the file.
    let below = file.join("sub");
    let out = offload_cmd(&dir, &["build", "--dry-run"], &[(CACHE_VAR, below.to_str().unwrap())]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("the offload cache `{}` is not a directory", file.display())),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"mine", "the file is left as it was");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build in a cold cache of its own while another process runs `cargo
/// offload clean --cache` over and over: the device sysroot is kept while
/// a device pass reads it, crates evicted as they are restored are
/// compiled, and the build succeeds with a binary that gives the right
/// results. Then a build with `OFFLOAD_CACHE_SIZE=0` keeps what it used and
/// prunes nothing it needs; a second project's build with the same limit
/// prunes what only the first one used.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test cache -- --include-ignored`"]
fn builds_succeed_while_the_cache_is_cleaned_under_them() {
    let cache = scratch("race");
    let env = [(CACHE_VAR, cache.to_str().unwrap())];
    let a = Fixture::renamed("bin-only", "cache-race-a").own_target();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (removed, cleans) = std::thread::scope(|s| {
        let cleaner = s.spawn(|| {
            let (mut removed, mut cleans) = (0usize, 0usize);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let out = clean(&cache, &[]);
                out.assert_success();
                cleans += 1;
                removed += usize::from(!out.stderr.contains("Removed 0 entries"));
                std::thread::sleep(Duration::from_millis(200));
            }
            (removed, cleans)
        });
        let built = a.offload_env(&["build", "--arch", "sm_90"], &env);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        built.assert_success();
        cleaner.join().unwrap()
    });
    eprintln!("the cleaner ran {cleans} times and removed something {removed} times during the build");
    assert!(cleans > 3 && removed > 0, "the cleaner ran {cleans} times, removed something {removed} times");
    let run = a.run_exe("debug", &a.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "{}", run.stdout);

    // Over a limit of 0, a build keeps what it used and nothing else.
    let zero = [(CACHE_VAR, cache.to_str().unwrap()), ("OFFLOAD_CACHE_SIZE", "0")];
    a.offload_env(&["build", "--arch", "sm_90"], &zero).assert_success();
    let kept = std::fs::read_dir(cache.join("sysroot")).unwrap().count();
    assert!(kept >= 2, "the sysroot and its lock stay: {kept}");
    let b = Fixture::renamed("bin-only", "cache-race-b").own_target();
    let out = b.offload_env(&["build", "--arch", "sm_80", "--release"], &zero);
    out.assert_success();
    assert!(out.stderr.contains("Pruned offload's cache to"), "{}", out.stderr);
    let sysroots: Vec<_> = std::fs::read_dir(cache.join("sysroot")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(sysroots.iter().all(|n| !n.to_string_lossy().contains("sm_90")), "sm_90's is pruned: {sysroots:?}");
    for f in [&a, &b] {
        let _ = std::fs::remove_dir_all(f.target_dir());
    }
    let _ = std::fs::remove_dir_all(&cache);
}
