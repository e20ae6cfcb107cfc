use super::*;

fn a(s: &str) -> Args {
    Args::new(s.split_whitespace().map(String::from).collect())
}

/// (rustc's argv, whether the crate may be replaced by an empty one)
#[test]
fn which_crates_may_be_replaced() {
    let table: &[(&str, bool)] = &[
        ("--crate-name rayon src/lib.rs --crate-type lib --out-dir /t/deps", true),
        (
            "--crate-name hostonly src/lib.rs --crate-type=rlib --out-dir /t/deps --extern either=/t/libeither.rlib",
            true,
        ),
        // Crates with kernels (they depend on offload) keep their errors.
        ("--crate-name k src/lib.rs --crate-type lib --out-dir /t/deps --extern offload=/t/liboffload.rlib", false),
        (
            "--crate-name k src/lib.rs --crate-type lib --out-dir /t/deps --extern force:offload=/t/liboffload.rlib",
            false,
        ),
        ("--crate-name offload src/lib.rs --crate-type lib --out-dir /t/deps", false),
        // Final crates and other crate types.
        ("--crate-name app src/main.rs --crate-type bin --out-dir /t/deps", false),
        ("--crate-name app src/main.rs --test --out-dir /t/deps", false),
        ("--crate-name c src/lib.rs --crate-type cdylib --out-dir /t/deps", false),
        ("--crate-name l src/lib.rs --crate-type lib", false),
    ];
    for (argv, want) in table {
        assert_eq!(replaceable(&a(argv)), *want, "{argv}");
    }
}

#[test]
fn dep_info_rules() {
    let d = "/t/deps/h-1.d: src/lib.rs src/a\\ b.rs /x/y.rs\n\nsrc/lib.rs:\n# env-dep:X=1\n";
    assert_eq!(first_rule_deps(d), ["src/lib.rs", "src/a b.rs", "/x/y.rs"]);
    assert!(first_rule_deps("# only a comment\n").is_empty());
    assert!(first_rule_deps("/t/x.d:\n").is_empty());
}

fn markers_of(list: &[(&str, bool, &str)]) -> Vec<Marker> {
    list.iter().map(|(k, std, first)| Marker { krate: k.to_string(), std: *std, first: first.to_string() }).collect()
}

/// rustc's messages at a use of a crate the device pass replaced (rustc
/// 1.101-nightly, an empty `hostonly`/`rayon` for nvptx64-nvidia-cuda).
#[test]
fn uses_of_replaced_crates_are_recognized() {
    let m = markers_of(&[("hostonly", true, "can't find crate for `std`"), ("rayon", true, "x")]);
    let table: &[(&str, Option<&str>)] = &[
        ("cannot find function `describe` in crate `hostonly`", Some("hostonly")),
        ("unresolved import `hostonly::describe`", Some("hostonly")),
        ("unresolved import `rayon::prelude`", Some("rayon")),
        ("failed to resolve: could not find `prelude` in `rayon`", Some("rayon")),
        ("cannot find type `Pool` in crate `rayon`", Some("rayon")),
        ("cannot find value `rayon` in this scope", None),
        ("cannot find function `describe` in crate `hostonly_extra`", None),
        ("no method named `par_iter` found for reference `&[f32]` in the current scope", None),
    ];
    for (message, want) in table {
        assert_eq!(named(message, &m, &LibDeps::new()).map(|n| n.marker.krate.as_str()), *want, "{message}");
    }
}

/// A crate that compiled for the GPU but only re-exports a replaced one (a
/// facade): rustc's messages name the facade (rustc 1.96 and 1.101-nightly,
/// an empty `clap_builder` under a `clap` of `pub use clap_builder::*;`);
/// the dependency graph ties it to the replaced crate.
#[test]
fn uses_of_a_facade_of_a_replaced_crate_are_recognized() {
    let m = markers_of(&[("clap_builder", true, "can't find crate for `std`"), ("rayon", true, "x")]);
    let deps: LibDeps = [
        ("clap", &["clap_builder", "clap_derive"][..]),
        ("clap_builder", &["clap_lex", "anstream"][..]),
        ("either", &[][..]),
        ("app_lib", &["either"][..]),
    ]
    .iter()
    .map(|(k, ds)| (k.to_string(), ds.iter().map(|d| d.to_string()).collect()))
    .collect();
    let table: &[(&str, Option<(&str, &str)>)] = &[
        ("cannot find `ColorChoice` in `clap`", Some(("clap", "clap_builder"))),
        ("unresolved import `clap::Parser`", Some(("clap", "clap_builder"))),
        ("cannot find type `Command` in crate `clap`", Some(("clap", "clap_builder"))),
        // The replaced crate itself, named directly.
        ("cannot find `Arg` in `clap_builder`", Some(("clap_builder", "clap_builder"))),
        ("unresolved import `rayon::prelude`", Some(("rayon", "rayon"))),
        // Crates that depend on no replaced crate, and names that are not crates.
        ("cannot find `Left` in `either`", None),
        ("cannot find function `f` in `app_lib`", None),
        ("cannot find value `clap` in this scope", None),
        ("cannot find `ColorChoice` in `clap_extra`", None),
    ];
    for (message, want) in table {
        let got = named(message, &m, &deps).map(|n| (n.krate(), n.marker.krate.as_str()));
        assert_eq!(got, *want, "{message}");
    }
}

/// The error at the use: rustc's span kept, the crate, the reason and the
/// fix in the message, rustc's suggestions replaced by the one help.
#[test]
fn the_use_gets_one_error_with_the_fix() {
    let mut d = serde_json::json!({
        "$message_type": "diagnostic",
        "message": "cannot find function `describe` in crate `hostonly`",
        "code": {"code": "E0425", "explanation": null},
        "level": "error",
        "spans": [{"file_name": "src/main.rs", "line_start": 4, "line_end": 4, "column_start": 25,
                   "column_end": 33, "is_primary": true, "label": "not found in `hostonly`", "text": [],
                   "byte_start": 90, "byte_end": 98, "suggested_replacement": null,
                   "suggestion_applicability": null, "expansion": null}],
        "children": [{"message": "consider importing this function", "level": "help", "spans": [], "children": [],
                      "code": null, "rendered": null}],
        "rendered": "error[E0425]: cannot find function `describe` in crate `hostonly`\n --> src/main.rs:4:25\n  |\n4 |         *yi = hostonly::describe(1);\n  |                         ^^^^^^^^ not found in `hostonly`\n\n"
    });
    let m = markers_of(&[("hostonly", true, "can't find crate for `std`")]);
    rewrite(&mut d, Named { marker: &m[0], facade: None }, "nvptx64-nvidia-cuda");
    let message = "crate `hostonly` cannot be used in device code: it does not build for nvptx64-nvidia-cuda (it \
                   needs `std`), so the device pass compiled an empty crate in its place";
    assert_eq!(d["message"], message);
    assert_eq!(d["spans"][0]["line_start"], 4, "rustc's span");
    let help = d["children"][0]["message"].as_str().unwrap();
    assert!(help.starts_with("use `hostonly` in host code only: mark the item that names it here `#[offload::host]`"));
    assert_eq!(d["children"].as_array().unwrap().len(), 1);
    let r = d["rendered"].as_str().unwrap();
    assert!(r.starts_with(&format!("error: {message}\n --> src/main.rs:4:25\n")), "{r}");
    assert!(r.ends_with(&format!("  = help: {help}\n\n")), "{r}");
    let other = markers_of(&[("simd_adler32", false, "mismatched types")]);
    rewrite(&mut d, Named { marker: &other[0], facade: None }, "nvptx64-nvidia-cuda");
    assert!(d["message"].as_str().unwrap().contains("(its first error: mismatched types)"), "{}", d["message"]);
}

/// The error at the use of a facade names it, the replaced crate it
/// re-exports, why that does not build, and the fix for the facade.
#[test]
fn a_facade_use_gets_one_error_naming_both_crates() {
    let mut d = serde_json::json!({
        "$message_type": "diagnostic",
        "message": "cannot find `ColorChoice` in `clap`",
        "code": {"code": "E0433", "explanation": null},
        "level": "error",
        "spans": [],
        "children": [],
        "rendered": "error[E0433]: cannot find `ColorChoice` in `clap`\n --> src/main.rs:4:23\n  |\n"
    });
    let m = markers_of(&[("clap_builder", true, "can't find crate for `std`")]);
    rewrite(&mut d, Named { marker: &m[0], facade: Some("clap") }, "nvptx64-nvidia-cuda");
    let message = "crate `clap` cannot be used in device code: it re-exports `clap_builder`, which does not build for \
                   nvptx64-nvidia-cuda (it needs `std`), so the device pass compiled an empty crate in its place";
    assert_eq!(d["message"], message);
    assert_eq!(d["code"], serde_json::Value::Null);
    let help = d["children"][0]["message"].as_str().unwrap();
    assert!(help.starts_with("use `clap` in host code only: mark the item that names it here `#[offload::host]`"));
    let r = d["rendered"].as_str().unwrap();
    assert!(r.starts_with(&format!("error: {message}\n --> src/main.rs:4:23\n")), "{r}");
}

#[test]
fn markers_are_read_by_crate_name() {
    let dir = std::env::temp_dir().join(format!("offload-host-only-markers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rayon_core-0123abcd"), "std\ncan't find crate for `std`\n").unwrap();
    std::fs::write(dir.join("simd_adler32-99"), "other\nmismatched types\n").unwrap();
    let mut got = markers(&dir);
    got.sort_by(|a, b| a.krate.cmp(&b.krate));
    assert_eq!(
        got,
        markers_of(&[("rayon_core", true, "can't find crate for `std`"), ("simd_adler32", false, "mismatched types")])
    );
    assert!(markers(&dir.join("absent")).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

/// The whole replacement with the host's real rustc: a library that fails
/// to compile becomes an empty crate at the same output paths, its marker
/// names the first error, its dep-info still names its real root file; once
/// it compiles, the marker is gone.
#[test]
fn a_failing_library_becomes_an_empty_crate() {
    let dir = std::env::temp_dir().join(format!("offload-host-only-compile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (out, markers_dir) = (dir.join("deps"), dir.join("host-only"));
    std::fs::create_dir_all(&out).unwrap();
    let root = dir.join("lib.rs");
    std::fs::write(&root, "pub fn f() -> u32 { undefined() }\n").unwrap();
    let argv = format!(
        "--crate-name hostlib --edition=2021 {} --error-format=json --json=diagnostic-rendered-ansi,artifacts \
         --crate-type lib --emit=dep-info,metadata,link -C extra-filename=-abc --out-dir {}",
        root.display(),
        out.display()
    );
    let args = a(&argv);
    let code = compile("rustc", &args, args.as_slice(), Some(&markers_dir)).unwrap().0;
    assert_eq!(code, 0, "replaced");
    assert!(out.join("libhostlib-abc.rlib").is_file() && out.join("libhostlib-abc.rmeta").is_file());
    let marker = std::fs::read_to_string(markers_dir.join("hostlib-abc")).unwrap();
    assert_eq!(marker, "other\ncannot find function `undefined` in this scope\n");
    let deps = first_rule_deps(&std::fs::read_to_string(out.join("hostlib-abc.d")).unwrap());
    assert!(deps.iter().any(|d| Path::new(d) == root), "the real root: {deps:?}");
    assert!(deps.iter().any(|d| d.ends_with("hostlib-abc-host-only.rs")), "the empty root: {deps:?}");
    // Older than any compilation: cargo compiles again a crate whose
    // sources changed after its compilation began.
    let stub = out.join("hostlib-abc-host-only.rs");
    assert_eq!(
        std::fs::metadata(&stub).unwrap().modified().unwrap(),
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1)
    );
    // Fixed: compiled for real, no marker.
    std::fs::write(&root, "pub fn f() -> u32 { 1 }\n").unwrap();
    assert_eq!(compile("rustc", &args, args.as_slice(), Some(&markers_dir)).unwrap().0, 0);
    assert!(!markers_dir.join("hostlib-abc").exists());
    // An error the empty crate has too (an unknown edition) is rustc's.
    let bad = a(&argv.replace("--edition=2021", "--edition=1999"));
    assert_ne!(compile("rustc", &bad, bad.as_slice(), Some(&markers_dir)).unwrap().0, 0);
    assert!(!markers_dir.join("hostlib-abc").exists());
    let _ = std::fs::remove_dir_all(dir);
}
