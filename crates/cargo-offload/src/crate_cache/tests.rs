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
