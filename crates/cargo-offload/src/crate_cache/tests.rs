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
