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
        externs: vec!["5e1f0c44a2b3d697".into()],
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
    let mut macros_rebuilt = base.clone();
    macros_rebuilt.externs[0] = "5e1f0c44a2b3d698".into();
    keys.push(key(&macros_rebuilt));
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "every change is a new entry");
}

#[test]
fn incremental_is_dropped_in_either_form() {
    let argv = v("--crate-name o -C incremental=/t/inc -Cincremental=/t/i2 --codegen=incremental=/t/i3 -C opt-level=0");
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
    // A crate that read a file neither the key nor the target directory
    // covers is not stored.
    std::fs::write(dir.join("elsewhere.rs"), "").unwrap();
    std::fs::write(&d, dep_info(&outa, &format!(" {}", dir.join("elsewhere.rs").display()))).unwrap();
    a.store(&stderr);
    assert!(!entry.exists(), "a file outside the sources and the target directory");
    // One that read a file a build script generated (`include!` of
    // `OUT_DIR/gen.rs`) is restored where that file has the same bytes.
    let gen = |t: &Path| t.join("debug/build/lib-9/out/gen.rs");
    for (t, text) in [(&ta, "pub const N: u32 = 1;"), (&tb, "pub const N: u32 = 2;")] {
        std::fs::create_dir_all(gen(t).parent().unwrap()).unwrap();
        std::fs::write(gen(t), text).unwrap();
    }
    std::fs::write(&d, dep_info(&outa, &format!(" {}", gen(&ta).display()))).unwrap();
    a.store(&stderr);
    assert!(entry.join(MANIFEST).is_file(), "a generated file in the target directory");
    assert!(!b.restore(), "this project's build script generated other bytes");
    std::fs::write(gen(&tb), "pub const N: u32 = 1;").unwrap();
    assert!(b.restore());
    let with_gen = std::fs::read_to_string(outb.join("lib-1.d")).unwrap();
    assert_eq!(with_gen, dep_info(&outb, &format!(" {}", gen(&tb).display())), "this project's paths");
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

/// The host pass's arguments for a registry crate (thiserror, as cargo
/// gives them) in the target directory `t`, and its environment.
fn host_inputs(t: &str, extra: &str) -> KeyInputs {
    let reg = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/thiserror-2.0.21";
    KeyInputs {
        rustc: "/home/u/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc rustc 1.95.0 (59807616e \
                2026-04-14) 9000:5"
            .into(),
        sources: "registry".into(),
        target_dir: t.into(),
        cwd: reg.into(),
        argv: v(&format!(
            "--crate-name thiserror --edition=2021 {reg}/src/lib.rs --error-format=json --crate-type lib \
             --emit=dep-info,metadata,link -C embed-bitcode=no -C debuginfo=2 --cfg feature=\"default\" \
             --cfg feature=\"std\" -C metadata=f08eadef15dd1e94 -C extra-filename=-e1f7106a13d9ffe4 \
             --out-dir {t}/debug/deps -L dependency={t}/debug/deps \
             --extern thiserror_impl={t}/debug/deps/libthiserror_impl-091569580ea7655a.so --cap-lints allow \
             --cfg error_generic_member_access{extra}"
        )),
        externs: vec!["77a0f1c2d3e4b5a6".into()],
        env: vec![
            ("CARGO_MANIFEST_DIR".into(), reg.into()),
            ("CARGO_PKG_NAME".into(), "thiserror".into()),
            ("OUT_DIR".into(), format!("{t}/debug/build/thiserror-5625190151795b8c/out")),
        ],
    }
}

/// The host pass: one entry for a registry crate in every project; a
/// changed feature, profile flag, edition, `-C metadata`, build script
/// output, rustc or dependency (its bytes) is another entry.
#[test]
fn host_keys_follow_features_and_flags_not_the_project() {
    let base = host_inputs("/p/a/target", "");
    assert_eq!(key(&base), key(&host_inputs("/home/u/b/target", "")), "another project's target directory");
    let mut keys = vec![key(&base)];
    let mut no_std = base.clone();
    let at = no_std.argv.iter().position(|a| a == "feature=\"std\"").unwrap();
    no_std.argv.drain(at - 1..=at);
    keys.push(key(&no_std));
    for extra in [" -C opt-level=3", " -C debug-assertions=off", " --cfg thiserror_nightly_testing"] {
        keys.push(key(&host_inputs("/p/a/target", extra)));
    }
    let swap = |from: &str, to: &str| {
        let mut k = base.clone();
        for a in &mut k.argv {
            *a = a.replace(from, to);
        }
        key(&k)
    };
    keys.push(swap("debuginfo=2", "debuginfo=0"));
    keys.push(swap("--edition=2021", "--edition=2024"));
    keys.push(swap("metadata=f08eadef15dd1e94", "metadata=f08eadef15dd1e95"));
    let mut impl_rebuilt = base.clone();
    impl_rebuilt.externs[0] = "77a0f1c2d3e4b5a7".into();
    keys.push(key(&impl_rebuilt));
    let mut beta = base.clone();
    beta.rustc = beta.rustc.replace("1.95.0 (59807616e", "1.96.0-beta.3 (a1b2c3d4e");
    keys.push(key(&beta));
    let mut out_dir = base.clone();
    out_dir.env[2].1 = "/p/a/target/debug/build/thiserror-0000000000000000/out".into();
    keys.push(key(&out_dir));
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "every change is a new entry");
}

/// `--extern` files are keyed by their bytes (an `.rlib` by its `.rmeta`),
/// in every form of the flag; a path-less `--extern` is skipped; a file
/// that cannot be read keeps the crate out of the cache; with a memo,
/// a file is read once per size and modification time.
#[test]
fn externs_are_keyed_by_their_bytes() {
    let dir = scratch("externs");
    let (rlib, rmeta, so) = (dir.join("liba-1.rlib"), dir.join("liba-1.rmeta"), dir.join("libm-2.so"));
    std::fs::write(&rlib, b"rlib").unwrap();
    std::fs::write(&rmeta, b"rmeta").unwrap();
    std::fs::write(&so, b"so").unwrap();
    let argv = |a: &Path| {
        vec![
            "--extern".to_string(),
            format!("a={}", a.display()),
            format!("--extern=noprelude:m={}", so.display()),
            "--extern".into(),
            "proc_macro".into(),
        ]
    };
    let h = |b: &[u8]| format!("{:016x}", offload_image::hash::fnv64(b));
    assert_eq!(extern_hashes(&argv(&rlib), None), Some(vec![h(b"rmeta"), h(b"so")]));
    assert_eq!(extern_hashes(&argv(&rmeta), None), Some(vec![h(b"rmeta"), h(b"so")]));
    std::fs::write(&rmeta, b"rmeta, compiled elsewhere").unwrap();
    assert_eq!(extern_hashes(&argv(&rlib), None), Some(vec![h(b"rmeta, compiled elsewhere"), h(b"so")]));
    assert_eq!(extern_hashes(&argv(&dir.join("libgone-3.rmeta")), None), None, "an unreadable file");
    let memo = dir.join("memo");
    assert_eq!(extern_hashes(&argv(&rlib), Some(&memo)), Some(vec![h(b"rmeta, compiled elsewhere"), h(b"so")]));
    assert_eq!(std::fs::read_dir(&memo).unwrap().count(), 2, "one memo per file");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dep-info path with `..` inside the sources is covered (libc names
/// `…/sysdeps/nptl/bits/../../x86/nptl/bits/struct_mutex.rs`); one that
/// climbs out of them is not.
#[test]
fn dot_dot_paths_are_resolved_before_they_are_covered() {
    let reg = Path::new("/home/u/.cargo/registry/src");
    let libc = "/home/u/.cargo/registry/src/index/libc-0.2.191/src";
    assert!(covered(reg, Path::new(&format!("{libc}/new/glibc/sysdeps/nptl/bits/../../x86/nptl/bits/m.rs"))));
    assert!(covered(reg, Path::new(&format!("{libc}/./lib.rs"))));
    assert!(!covered(reg, Path::new(&format!("{libc}/../../../../../../etc/gen.rs"))));
    assert!(!covered(reg, Path::new(&format!("{libc}/.hidden/lib.rs"))), "hidden parts stay out");
}

/// A stored entry of `lib` for the target directory `t` (its dep-info and
/// rlib in `out`), and rustc's messages naming them.
fn stored(dir: &Path, t: &Path, out: &Path) -> (Slot, Vec<String>) {
    let src = dir.join("registry/src/index/lib-1.0.0/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "").unwrap();
    std::fs::create_dir_all(out).unwrap();
    let (rlib, d) = (out.join("liblib-1.rlib"), out.join("lib-1.d"));
    std::fs::write(&rlib, vec![42u8; 64 << 10]).unwrap();
    std::fs::write(&d, format!("{}: {}\n", rlib.display(), src.join("lib.rs").display())).unwrap();
    let stderr = [&rlib, &d].iter().map(|p| format!("{{\"artifact\":\"{}\",\"emit\":\"x\"}}", p.display())).collect();
    let entry = dir.join("cache/crates/lib-0123");
    std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
    (slot(&entry, out, t, &[&dir.join("registry/src")]), stderr)
}

/// A restore records the entry's last use (the manifest's modification
/// time), which pruning orders by.
#[test]
fn a_restore_is_a_use() {
    let dir = scratch("touch");
    let (ta, tb) = (dir.join("a/target"), dir.join("b/target"));
    let (a, stderr) = stored(&dir, &ta, &ta.join("debug/deps"));
    a.store(&stderr);
    let manifest = a.entry.join(MANIFEST);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::OpenOptions::new().append(true).open(&manifest).unwrap().set_modified(old).unwrap();
    let outb = tb.join("debug/deps");
    std::fs::create_dir_all(&outb).unwrap();
    assert!(slot(&a.entry, &outb, &tb, &[&dir.join("registry/src")]).restore());
    let used = std::fs::metadata(&manifest).unwrap().modified().unwrap();
    assert!(used > old + std::time::Duration::from_secs(3000), "{used:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An entry whose rlib was cut short (a full disk, a hand edit) is not
/// restored: the crate is compiled (a miss) instead of handing rustc a
/// broken library that only `clean --cache` and `cargo clean` together
/// would mend. A restore of the intact entry copies every byte.
#[test]
fn a_truncated_entry_is_a_miss() {
    let dir = scratch("truncated");
    let (ta, tb) = (dir.join("a/target"), dir.join("b/target"));
    let (a, stderr) = stored(&dir, &ta, &ta.join("debug/deps"));
    a.store(&stderr);
    let outb = tb.join("debug/deps");
    std::fs::create_dir_all(&outb).unwrap();
    let b = slot(&a.entry, &outb, &tb, &[&dir.join("registry/src")]);
    assert!(b.restore());
    assert_eq!(std::fs::read(outb.join("liblib-1.rlib")).unwrap(), vec![42u8; 64 << 10]);
    std::fs::remove_file(outb.join("liblib-1.rlib")).unwrap();
    let cached = a.entry.join("liblib-1.rlib");
    std::fs::OpenOptions::new().write(true).open(&cached).unwrap().set_len(1000).unwrap();
    assert!(!b.restore(), "a cut rlib is restored");
    assert!(!outb.join("liblib-1.rlib").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Another `cargo offload` pruning the cache while this one restores the
/// same crate: every `serve` ends with the crate's files complete in the
/// target directory, restored or compiled, never a failure.
#[test]
fn a_restore_racing_an_eviction_compiles_instead() {
    let dir = scratch("race");
    let (ta, tb) = (dir.join("a/target"), dir.join("b/target"));
    let (a, stderr) = stored(&dir, &ta, &ta.join("debug/deps"));
    let outb = tb.join("debug/deps");
    std::fs::create_dir_all(&outb).unwrap();
    let b = slot(&a.entry, &outb, &tb, &[&dir.join("registry/src")]);
    let expected_d = format!(
        "{}: {}\n",
        outb.join("liblib-1.rlib").display(),
        dir.join("registry/src/index/lib-1.0.0/src/lib.rs").display()
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Stops the evictor however the loop below ends (a failed assertion too).
    struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let (mut restored, mut compiled) = (0, 0);
    let evicted = std::thread::scope(|s| {
        let evictor = s.spawn(|| {
            let (cache, mut evicted) = (dir.join("cache"), 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                a.store(&stderr);
                std::thread::sleep(std::time::Duration::from_micros(300));
                for e in crate::cache_gc::entries(&cache) {
                    evicted += usize::from(crate::cache_gc::evict(&e));
                }
            }
            evicted
        });
        let stopping = Stop(&stop);
        for _ in 0..400 {
            let _ = std::fs::remove_file(outb.join("liblib-1.rlib"));
            let _ = std::fs::remove_file(outb.join("lib-1.d"));
            let served = b.serve(|_| -> Result<(i32, Option<Vec<String>>), ()> {
                std::fs::write(outb.join("liblib-1.rlib"), vec![42u8; 64 << 10]).unwrap();
                std::fs::write(outb.join("lib-1.d"), &expected_d).unwrap();
                Ok((0, None))
            });
            match served {
                Ok(Served::Restored) => restored += 1,
                Ok(Served::Compiled(0)) => compiled += 1,
                other => panic!("{other:?}"),
            }
            let rlib = std::fs::read(outb.join("liblib-1.rlib")).expect("the rlib is there");
            assert!(rlib.len() == 64 << 10 && rlib.iter().all(|&b| b == 42), "a complete rlib");
            assert_eq!(std::fs::read_to_string(outb.join("lib-1.d")).unwrap(), expected_d);
        }
        drop(stopping);
        evictor.join().unwrap()
    });
    eprintln!("restored {restored}, compiled {compiled}, evicted {evicted}");
    assert!(evicted > 0 && restored + compiled == 400);
    let _ = std::fs::remove_dir_all(&dir);
}
