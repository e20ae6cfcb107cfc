//! End to end: fixture crates from `tests/fixtures/` copied to a temporary
//! directory and built by the real `cargo offload` (device pass with the
//! device toolchain, device link, embedding, host pass). Kernels run on the
//! host fallback here; their results are checked against values computed in
//! the test.
//!
//! Needs the device toolchain (see the README's setup), and takes about ten
//! minutes cold on two cores: every test that builds is `#[ignore]`d, out of
//! the README's quick test command, and CI runs them all with
//! `cargo test -p cargo-offload --test e2e -- --include-ignored`. With
//! `OFFLOAD_REQUIRE_PTXAS=1` (set by CI) every image must also carry a cubin
//! assembled by `ptxas`.

mod common;

use common::*;

/// The entries of `ptx` that are the user's kernels: all but the stack probe
/// that offload-linker adds (once) to a module with recursion guards.
fn user_entries(ptx: &str) -> Vec<String> {
    let all = offload_image::ptx_entries(ptx);
    let probes = all.iter().filter(|e| *e == "__offload_stack_probe").count();
    assert!(probes <= 1, "the stack probe at most once: {all:?}");
    all.into_iter().filter(|e| e != "__offload_stack_probe").collect()
}

#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn bin_crate_without_lib_section_exports_each_kernel_once() {
    let f = Fixture::renamed("bin-only", "exports");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    assert!(out.stderr.contains(&format!("Embedding device image in bin `{}`", f.name)), "{}", out.stderr);

    let ptx = f.ptx("sm_90", "debug", &f.name);
    let entries = user_entries(&ptx);
    assert_eq!(entries.len(), 2, "two kernels, two entries: {entries:?}");
    for kernel in ["axpy", "divide"] {
        let prefix = format!("__offload_kernel_{}_{kernel}_", f.name);
        assert_eq!(entries.iter().filter(|e| e.starts_with(&prefix)).count(), 1, "{prefix} in {entries:?}");
    }
    // Nothing else is exported: every other function is internal (.func without .visible).
    assert!(!ptx.contains(".visible .func"), "only kernels are visible");

    // The host binary carries the same kernels.
    let images = embedded_images(&f.host_exe("debug", &f.name));
    let ptx_img = images.iter().find(|i| i.0 == "PTX").expect("a PTX image");
    assert_eq!(ptx_img.1, "sm_90");
    let mut want = entries.clone();
    want.sort();
    assert_eq!(ptx_img.2, want);
    if require_ptxas() {
        assert!(images.iter().any(|i| i.0 == "cubin" && i.1 == "sm_90"), "ptxas -arch=sm_90 cubin: {images:?}");
    }

    // Run on the host fallback; compare with the test's own computation.
    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_bin_only_output(&run.stdout);
}

/// What the `bin-only` fixture prints, computed here: its saxpy's `y` and
/// the xor of its u128 division kernel's quotients.
fn assert_bin_only_output(stdout: &str) {
    let x = |i: usize| i as f64 * 0.5;
    let y = |i: usize| 2.0 * x(i) + (1000 - i) as f64;
    let ysum: f64 = (0..1000).map(y).sum();
    let qxor =
        (1..=64u64).map(|i| ((((i * 0x0123_4567_89ab) as u128) << 64 | 7) / 1_000_003) as u64).fold(0, |a, b| a ^ b);
    assert_eq!(stdout.trim(), format!("y[0]={} y[999]={} ysum={ysum} qxor={qxor}", y(0), y(999)));
}

/// Each kernel is exported once whatever `--emit` and `-Copt-level` the
/// device rustflags set. Under `--fmad`, whose device target directory is
/// its own, so that the rebuilds these flags cause do not rebuild the
/// device crates of the other tests (the host build and the sysroot are
/// shared); in the dev profile.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn each_kernel_once_whatever_emit_and_opt_level() {
    let f = Fixture::renamed("bin-only", "emit");
    for flags in [
        "-Copt-level=0 --emit=llvm-ir,llvm-bc,link",
        "-Copt-level=1",
        "-Copt-level=s --emit=llvm-bc,link",
        "-Copt-level=z --emit=llvm-ir,link",
    ] {
        let out = f.offload_env(&["build", "--arch", "sm_90", "--fmad"], &[("OFFLOAD_DEVICE_RUSTFLAGS", flags)]);
        out.assert_success();
        let ptx = f
            .target_dir()
            .join(format!("offload/nvptx64-nvidia-cuda-sm_90-fmad/nvptx64-nvidia-cuda/debug/{}.ptx", f.name));
        let entries = user_entries(&std::fs::read_to_string(&ptx).unwrap());
        assert_eq!(entries.len(), 2, "{flags}: {entries:?}");
        for kernel in ["axpy", "divide"] {
            let prefix = format!("__offload_kernel_{}_{kernel}_", f.name);
            assert_eq!(entries.iter().filter(|e| e.starts_with(&prefix)).count(), 1, "{flags}: {entries:?}");
        }
        let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
        run.assert_success();
        assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "{flags}: {}", run.stdout);
    }
}

#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn no_kernels_is_one_clear_error() {
    let f = Fixture::new("no-kernels");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 5, "{}", out.stderr);
    assert!(
        out.stderr.contains("error: no kernels: bin `fixture_no_kernels` define(s) no `#[offload::kernel]` function"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("help: mark a function `#[offload::kernel]`"), "{}", out.stderr);
}

/// Dependencies only host code uses stay in plain `[dependencies]`: a
/// local crate that needs `std` and `rayon` (std threads), compiled for the
/// GPU, fail; the device pass compiles an empty crate in place of each, says
/// so once, and the binary builds and runs. A kernel that names such a
/// crate gets one error at that use, naming the crate and the fix, and none
/// of rustc's `std` errors of the crate itself; so does a kernel that names
/// a crate that re-exports one (a facade, as `clap` of `clap_builder`).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn host_only_dependencies_stay_in_plain_dependencies() {
    let f = Fixture::new("std-dep");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    let note = out.stderr.lines().find(|l| l.starts_with("note: ")).unwrap_or_else(|| panic!("{}", out.stderr));
    for krate in ["`hostonly`", "`rayon`", "`rayon_core`"] {
        assert!(note.contains(krate), "{krate}: {note}");
    }
    assert!(
        note.contains("do not build for nvptx64-nvidia-cuda sm_90: the device pass compiled an empty crate"),
        "{note}"
    );
    assert!(!out.stderr.contains("error:") && !out.stderr.contains("error["), "{}", out.stderr);
    let run = f.run_exe("debug", "fixture_std_dep", &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_eq!(run.stdout.trim(), "[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0] sum=8 half=4");
    let again = f.offload(&["build", "--arch", "sm_90"]);
    again.assert_success();
    assert!(!again.stderr.contains("note: "), "replaced once, then fresh: {}", again.stderr);

    // A kernel that names one: one error, at the use.
    f.edit("src/main.rs", |s| s.replace("*yi = v;", "*yi = hostonly::half(v);"));
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let error = "error: crate `hostonly` cannot be used in device code: it does not build for nvptx64-nvidia-cuda \
                 (it needs `std`), so the device pass compiled an empty crate in its place\n --> src/main.rs:4:25";
    assert_eq!(out.stderr.matches("error: crate `hostonly`").count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains(error), "{}", out.stderr);
    assert!(out.stderr.contains("= help: use `hostonly` in host code only"), "{}", out.stderr);
    assert!(
        out.stderr.contains("the device pass failed (1 compile error(s) for nvptx64-nvidia-cuda sm_90)"),
        "{}",
        out.stderr
    );
    for noise in ["can't find crate for `std`", "-Zbuild-std", "E0425", "E0463"] {
        assert!(!out.stderr.contains(noise), "{noise}: {}", out.stderr);
    }

    // Through a facade that compiled for the GPU (`facade` re-exports
    // `hostonly`, as `clap` does `clap_builder`): the same one error, naming both.
    f.edit("src/main.rs", |s| s.replace("hostonly::half(v)", "facade::half(v) + facade::half(v)"));
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let error = "error: crate `facade` cannot be used in device code: it re-exports `hostonly`, which does not build \
                 for nvptx64-nvidia-cuda (it needs `std`), so the device pass compiled an empty crate in its place\n \
                 --> src/main.rs:4:";
    assert_eq!(out.stderr.matches("error: crate `facade`").count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains(error), "{}", out.stderr);
    assert!(out.stderr.contains("= help: use `facade` in host code only"), "{}", out.stderr);
    for noise in ["cannot find", "E0425", "E0433"] {
        assert!(!out.stderr.contains(noise), "{noise}: {}", out.stderr);
    }
}

/// A crate whose only error is in device code: plain `cargo check` (what
/// rust-analyzer runs) passes; `cargo offload check --message-format json`
/// prints the error as cargo's JSON record at the kernel's line, marked as
/// the device pass's, ends with `build-finished`, and fails; `cargo offload
/// build --message-format json` prints the same record; without JSON, the
/// rendered error with the note goes to stderr.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn device_only_errors_are_json_records_at_the_kernel() {
    let f = Fixture::new("device-error");
    f.cargo(&["check"]).assert_success();
    let records = |out: &Output| -> Vec<serde_json::Value> {
        out.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    };
    let device_error = |v: &serde_json::Value| {
        v["reason"] == "compiler-message"
            && v["message"]["level"] == "error"
            && v["message"]["message"] == "cannot find function `twice` in this scope"
    };
    for command in ["check", "build"] {
        let out = f.offload(&[command, "--arch", "sm_90", "--message-format", "json"]);
        assert_eq!(out.code, 4, "{command}: {}", out.stderr);
        let all = records(&out);
        let errors: Vec<&serde_json::Value> = all.iter().filter(|v| device_error(v)).collect();
        assert_eq!(errors.len(), 1, "{command}: {}", out.stdout);
        let d = &errors[0]["message"];
        let span = &d["spans"][0];
        assert_eq!(
            (span["file_name"].as_str(), span["line_start"].as_u64(), span["column_start"].as_u64()),
            (Some("src/main.rs"), Some(4), Some(15))
        );
        assert_eq!(span["is_primary"], true);
        let note = d["children"].as_array().unwrap().last().unwrap();
        assert_eq!(
            (note["level"].as_str(), note["message"].as_str()),
            (Some("note"), Some("in the device pass for nvptx64-nvidia-cuda sm_90"))
        );
        assert!(d["rendered"].as_str().unwrap().contains("= note: in the device pass for nvptx64-nvidia-cuda sm_90"));
        assert_eq!(errors[0]["target"]["name"], "fixture_device_error");
        assert_eq!(
            all.last().unwrap(),
            &serde_json::json!({"reason": "build-finished", "success": false}),
            "{command}"
        );
        assert_eq!(all.iter().filter(|v| v["reason"] == "build-finished").count(), 1, "{command}");
        assert!(!out.stderr.contains("cannot find function"), "JSON only: {}", out.stderr);
        // What rust-analyzer reads (`--nocapture` shows it).
        eprintln!("{command}: {}", out.stdout.lines().find(|l| l.contains("`twice`")).unwrap());
    }
    let out = f.offload(&["check", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    for line in [
        "error[E0425]: cannot find function `twice` in this scope\n  --> src/main.rs:4:15",
        "   |    ^^^^^\n   = note: in the device pass for nvptx64-nvidia-cuda sm_90\n",
        "error: the device pass failed (1 compile error(s) for nvptx64-nvidia-cuda sm_90)",
    ] {
        assert!(out.stderr.contains(line), "{line}: {}", out.stderr);
    }
    assert_eq!(out.stderr.matches("= note: in the device pass").count(), 1, "the error only: {}", out.stderr);
}

/// rustc 1.96 (Debian's) warns that the PTX feature `cargo offload`
/// enables is unstable; that warning is not shown, so cargo's summary does
/// not count it: `due to 1 previous error`, not `…; 1 warning emitted`,
/// in both message formats.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn the_summary_counts_only_the_warnings_shown() {
    let f = Fixture::renamed("device-error", "summary");
    let debian = [("OFFLOAD_RUSTC", "/usr/bin/rustc")];
    for format in ["human", "json"] {
        let out = f.offload_env(&["build", "--arch", "sm_90", "--message-format", format], &debian);
        assert_eq!(out.code, 4, "{}", out.stderr);
        assert!(out.stderr.contains("rustc 1.96"), "Debian's rustc: {}", out.stderr);
        let summary = format!("could not compile `{}` (bin \"{}\") due to 1 previous error\n", f.name, f.name);
        assert!(out.stderr.contains(&summary), "{format}: {}", out.stderr);
        assert!(!out.stderr.contains("warning"), "{format}: {}", out.stderr);
        assert!(!out.stdout.contains("\"level\":\"warning\""), "{format}: {}", out.stdout);
    }
}

/// `--keep-going` with two binaries, one of which has an error in device
/// code only: as plain cargo, the other is built (its device image, then
/// the host pass), and runs; the failed one is not linked (no binary
/// without its kernels), the error says so, and the build fails.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn keep_going_builds_the_binaries_whose_device_images_were_built() {
    let f = Fixture::new("keep-going");
    let out = f.offload(&["build", "--arch", "sm_90", "--keep-going"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("cannot find function `twice` in this scope"), "{}", out.stderr);
    assert!(
        out.stderr.contains("error: `bad` was not linked: its device pass for nvptx64-nvidia-cuda sm_90 failed"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("the host pass built the binaries whose device images were built (bin `good`)"));
    assert!(!f.host_exe("debug", "bad").exists(), "{}", out.stderr);
    let run = f.run_exe("debug", "good", &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    let want: Vec<f32> = (0..4).map(|i| (3 * i) as f32).collect();
    assert_eq!(run.stdout.trim(), format!("{want:?}"));
}

#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn immovable_argument_type_is_a_compile_error_on_the_argument() {
    let f = Fixture::new("bad-arg");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("`Vec<f32>` cannot be moved to the device: `Vec` owns host memory"), "{}", out.stderr);
    assert!(out.stderr.contains("src/main.rs:2:19"), "points at the parameter: {}", out.stderr);
    assert!(out.stderr.contains("`(f32, f32)` cannot be moved to the device"), "{}", out.stderr);
    assert!(out.stderr.contains("src/main.rs:16:21"), "points at the parameter: {}", out.stderr);
    // A by-value parameter aligned to 32 (through a field): an error at the
    // parameter before rustc's nvptx64 ABI code would stop with an ICE.
    let wide = "kernel parameter `h: HoldsWide` cannot be passed by value: its type is aligned to more than 16 bytes, \
                the most a GPU kernel parameter can be (rustc's nvptx64 kernel ABI). Pass it by reference \
                (`h: &HoldsWide`, copied to the device) or lower its `#[repr(align(N))]` to 16 or less";
    assert!(out.stderr.contains(wide), "{}", out.stderr);
    assert!(out.stderr.contains("src/main.rs:38:26"), "points at the parameter: {}", out.stderr);
    assert!(!out.stderr.contains("the compiler unexpectedly panicked"), "no ICE: {}", out.stderr);
    // The host compiler (plain cargo, the IDE) reports the same errors.
    let host = f.cargo(&["build"]);
    assert_ne!(host.code, 0);
    assert!(host.stderr.contains("`Vec<f32>` cannot be moved to the device"), "{}", host.stderr);
    assert!(host.stderr.contains("`(f32, f32)` cannot be moved to the device"), "{}", host.stderr);
    assert!(host.stderr.contains(wide), "{}", host.stderr);
}

#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn std_float_methods_and_kernels_calling_kernels_get_messages_that_name_the_fix() {
    let f = Fixture::new("device-messages");
    // `x.sin()` compiles on the host (std's method) but not in the device
    // pass; rustc's hint there names the trait that offload::math provides.
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("no method named `sin` found for type `f32`"), "{}", out.stderr);
    // rustc's help names the trait and a path to import it by; which path
    // depends on the rustc (1.96: the prelude's re-export; 1.101: the module).
    assert!(
        out.stderr.contains("trait `FloatMethods` which provides `sin` is implemented but not in scope"),
        "{}",
        out.stderr
    );
    assert!(
        ["use offload::math::methods::FloatMethods;", "use offload::prelude::FloatMethods;"]
            .iter()
            .any(|u| out.stderr.contains(u)),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("no method named `mul_add` found"), "{}", out.stderr);
    // The fix works: with the prelude (which brings the trait), the same
    // kernel builds and its results match the host's (checked by the program).
    f.edit("src/main.rs", |s| s.replace("use offload::kernel;", "use offload::prelude::*;"));
    f.offload(&["build", "--arch", "sm_90"]).assert_success();
    let run = f.run_exe("debug", "fixture_device_messages", &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_eq!(run.stdout.trim(), "wave ok");
    // A kernel calling a kernel: the rule, in both passes.
    f.edit("src/main.rs", |s| s + "\n#[kernel]\nfn twice(t: f32, out: &mut [f32]) {\n    wave(t, out);\n}\n");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("error[E0277]: a kernel cannot call or launch another kernel"), "{}", out.stderr);
    assert!(!out.stderr.contains("From<f32>"), "{}", out.stderr);
    // One error: not rustc's E0061 at the same call (the launcher's
    // arguments), nor in rustc's `--explain` notes and cargo's count.
    assert!(!out.stderr.contains("E0061") && !out.stderr.contains("arguments were supplied"), "{}", out.stderr);
    assert!(out.stderr.contains("try `rustc --explain E0277`"), "{}", out.stderr);
    assert!(out.stderr.contains("(bin \"fixture_device_messages\") due to 1 previous error\n"), "{}", out.stderr);
    // The device pass's note on rustc's column (its `|` and `=`): as the line above it.
    let lines: Vec<&str> = out.stderr.lines().collect();
    let at = lines.iter().position(|l| l.contains("= note: in the device pass for")).expect(&out.stderr);
    let column = |l: &str| l.find(|c: char| c != ' ');
    assert_eq!(column(lines[at]), column(lines[at - 1]), "{}\n{}", lines[at - 1], lines[at]);
    let host = f.cargo(&["build"]);
    assert!(host.stderr.contains("a kernel cannot call or launch another kernel"), "{}", host.stderr);
}

#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn plain_cargo_build_still_links_and_runs_on_the_host() {
    let f = Fixture::renamed("bin-only", "plain");
    let out = f.cargo(&["build"]);
    out.assert_success();
    let images = embedded_images(&f.host_exe("debug", &f.name));
    assert!(images.is_empty(), "plain cargo embeds no image: {images:?}");
    let run = f.run_exe("debug", &f.name, &[]);
    run.assert_success();
    assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "{}", run.stdout);
    // With OFFLOAD_DEVICE=cuda there is no GPU (or no image): one-line reason, non-zero exit.
    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "cuda")]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("OFFLOAD_DEVICE=cuda but no usable CUDA GPU"), "{}", run.stderr);
    assert!(run.stderr.contains("panicked"), "the fixture unwraps the launch error: {}", run.stderr);
}

/// The sample, built by `cargo offload` in the dev profile, runs on the
/// host fallback with right results; the same binary with a corrupted image
/// (the cubin if ptxas made one) gives one warning naming it, and the
/// kernels still give the right results (on the host here; on a GPU from
/// the PTX: scripts/gpu.sh run hardening). The other examples check
/// themselves on the host fallback in their own tests (`examples/*/tests`).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn sample_runs_on_the_host_fallback_and_a_corrupted_image_is_not_used() {
    let root = repo_root();
    let target = shared_target_dir();
    let sample = offload_cmd(
        &root.join("examples/01-first-kernel"),
        &["run", "--arch", "sm_90", "--target-dir", target.to_str().unwrap()],
        &[],
    );
    sample.assert_success();
    for line in ["saxpy    n=1000003: 0 wrong", "all results match the host reference"] {
        assert!(sample.stdout.contains(line), "{line}: {}", sample.stdout);
    }
    assert!(sample.stderr.contains("Embedding device image in bin `sample_offload`"), "{}", sample.stderr);

    let exe = target.join("debug/sample_offload");
    let kind = if embedded_images(&exe).iter().any(|i| i.0 == "cubin") { "cubin" } else { "PTX" };
    let bad = target.join("sample_offload-corrupted");
    corrupt_image(&exe, kind, 16, &bad);
    for env in [&[][..], &[("OFFLOAD_DEVICE", "host")][..]] {
        let run = run_path(&bad, env);
        run.assert_success();
        let warning = format!("offload: warning: the embedded sm_90 {kind} image is corrupted (CRC-32 ");
        assert_eq!(run.stderr.matches(&warning).count(), 1, "one warning naming the image ({env:?}): {}", run.stderr);
        assert!(
            run.stderr
                .contains("the binary was changed after `cargo offload` built it; it is not used (rebuild the binary)"),
            "{}",
            run.stderr
        );
        for line in ["saxpy    n=1000003: 0 wrong", "all results match the host reference"] {
            assert!(run.stdout.contains(line), "{line}: {}", run.stdout);
        }
    }
}

/// `device-model`, built once for sm_90 in the dev profile for the tests
/// that read its image or its PTX, without a cubin: ptxas takes minutes of
/// CPU on this image (the GPU runbook's `device-model` suite builds and
/// checks it with one).
fn device_model_sm_90() -> std::sync::Arc<Output> {
    built_once("device-model sm_90 dev", || {
        let target = shared_target_dir();
        offload_cmd(
            &repo_root(),
            &["build", "--arch", "sm_90", "--target-dir", target.to_str().unwrap(), "-p", "device-model"],
            &[("OFFLOAD_PTXAS", "")],
        )
    })
}

/// Every example and `device-model` build an sm_90 image with kernels, in
/// the dev profile (device code is optimized in every profile); every
/// example's PTX assembles with `ptxas -arch=sm_90` (the cubin in its image
/// is that assembly).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn every_example_builds_an_sm_90_image() {
    let root = repo_root();
    let target = shared_target_dir();
    // The package (and binary) name of each crate under examples/ and bench/
    // of this workspace (examples/12-mpi-jacobi, which needs MPI, is a
    // workspace of its own: CI builds it in its own step).
    let mut examples: Vec<String> = ["examples", "bench"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().flatten())
        .filter_map(|e| std::fs::read_to_string(e.path().join("Cargo.toml")).ok())
        .filter(|toml| !toml.lines().any(|l| l.trim() == "[workspace]"))
        .map(|toml| {
            let name = toml.lines().find_map(|l| l.strip_prefix("name = ")).expect("a package name");
            name.trim_matches('"').to_string()
        })
        .collect();
    examples.sort();
    assert!(examples.len() >= 2, "{examples:?}");
    let mut args = vec!["build", "--arch", "sm_90", "--target-dir", target.to_str().unwrap()];
    for e in &examples {
        args.push("-p");
        args.push(e);
    }
    let out = offload_cmd(&root, &args, &[WITH_PTXAS]);
    out.assert_success();
    device_model_sm_90().assert_success();
    // cfg!(target_feature = "ptx78") etc. hold in sm_90 device code: the
    // device-model's `features` kernel stores its mask as a constant
    // (tests/device-model/src/features.rs, SM_90 = 0x5a5a0077).
    let ptx = embedded_ptx(&target.join("debug/device-model"), "sm_90");
    assert!(ptx.contains(&0x5a5a_0077u32.to_string()), "the sm_90 feature mask is not in device-model's PTX");
    for e in examples.iter().chain(std::iter::once(&"device-model".to_string())) {
        let images = embedded_images(&target.join("debug").join(e));
        let ptx = images.iter().find(|i| i.0 == "PTX").unwrap_or_else(|| panic!("{e}: {images:?}"));
        assert_eq!(ptx.1, "sm_90");
        assert!(!ptx.2.is_empty(), "{e} has kernels");
        if require_ptxas() && e != "device-model" {
            assert!(images.iter().any(|i| i.0 == "cubin" && i.1 == "sm_90"), "{e}: {images:?}");
        }
    }
    // Tutorial 07's two generic kernels, each with the three instantiations
    // its host code uses. Their instance markers once had identical bodies
    // for the same type arguments, and LLVM's MergeFunctions (in optimized
    // builds like this one) folded them: clamp's instantiations were
    // missing and its GPU launches failed with InstanceNotBuilt.
    let images = embedded_images(&target.join("debug/generics"));
    let ptx = &images.iter().find(|i| i.0 == "PTX").unwrap().2;
    for k in ["axpy", "clamp"] {
        let of = ptx.iter().filter(|s| s.starts_with(&format!("__offload_kernel_generics_{k}_"))).count();
        assert_eq!(of, 3, "{k}: {ptx:?}");
    }
}

/// Kernels in a library used by two binaries: each binary's image holds the
/// kernels of its own crate graph and nothing else; `cargo offload test`
/// builds one image per test binary, with `#[cfg(test)]` kernels in the unit
/// tests' image.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn workspace_images_hold_exactly_the_reachable_kernels() {
    let f = Fixture::new("workspace");
    let out = f.offload(&["build", "--arch", "sm_90", "--workspace"]);
    out.assert_success();
    let names = |exe: &str| -> Vec<String> {
        let imgs = embedded_images(&f.host_exe("debug", exe));
        let ptx = imgs.iter().find(|i| i.0 == "PTX").unwrap_or_else(|| panic!("{exe}: {imgs:?}"));
        // The kernel's crate and name: without the symbol's hash (and, for
        // an instantiation of a generic kernel, the instantiation's hash).
        let mut n: Vec<String> = ptx
            .2
            .iter()
            .map(|k| {
                let mut k = k.trim_start_matches("__offload_kernel_");
                while let Some((head, h)) =
                    k.rsplit_once('_').filter(|(_, h)| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                {
                    let _ = h;
                    k = head;
                }
                k.to_string()
            })
            .collect();
        n.sort();
        n
    };
    // The library's generic `fill` is instantiated for f32 (app-a) and u64
    // (app-b); both instantiations are the library's device code, so both
    // binaries carry both, with the symbols `cargo offload` derives.
    for exe in ["ws_app_a", "ws_app_b"] {
        let imgs = embedded_images(&f.host_exe("debug", exe));
        let all = &imgs.iter().find(|i| i.0 == "PTX").unwrap().2;
        let fills: Vec<&String> = all.iter().filter(|k| k.starts_with("__offload_kernel_ws_kernels_fill_")).collect();
        assert_eq!(fills.len(), 2, "{exe}: {all:?}");
        let base = fills[0].rsplit_once('_').unwrap().0;
        for ty in ["(f32,)", "(u64,)"] {
            assert!(all.contains(&offload_image::symbol::instance(base, ty)), "{exe} lacks fill::<{ty}>: {all:?}");
        }
    }
    assert_eq!(names("ws_app_a"), ["ws_app_a_shift", "ws_kernels_fill", "ws_kernels_fill", "ws_kernels_scale"]);
    assert_eq!(names("ws_app_b"), ["ws_kernels_fill", "ws_kernels_fill", "ws_kernels_scale"]);
    let a = f.run_exe("debug", "ws_app_a", &[("OFFLOAD_DEVICE", "host")]);
    a.assert_success();
    // Σ (2i + 1) for i < 100; 300 × 7.5
    assert_eq!(a.stdout.trim(), format!("sum={} fill=2250", (0..100).map(|i| 2 * i + 1).sum::<i32>()));
    let b = f.run_exe("debug", "ws_app_b", &[("OFFLOAD_DEVICE", "host")]);
    assert_eq!(b.stdout.trim(), format!("[-3.0, -3.0, -3.0] [{m}, {m}]", m = u64::MAX - 1));

    let test = f.offload_env(&["test", "--arch", "sm_90", "--workspace"], &[("OFFLOAD_DEVICE", "host")]);
    test.assert_success();
    assert!(test.stderr.contains("Embedding device image in test `ws_kernels` (PTX sm_90"), "{}", test.stderr);
    assert!(test.stderr.contains("Embedding device image in test `integ` (PTX sm_90"), "{}", test.stderr);
    assert!(test.stdout.contains("test tests::test_only_kernel_runs ... ok"), "{}", test.stdout);
    assert!(test.stdout.contains("test integration_kernels_run ... ok"), "{}", test.stdout);
    assert!(test.stdout.contains("test tests::library_kernel_runs ... ok"), "{}", test.stdout);
    // The unit-test binary of the library carries its #[cfg(test)] kernel.
    let unit = test
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Running unittests src/lib.rs ("))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{}", test.stderr));
    let imgs = embedded_images(&f.dir.join(unit));
    let kernels = &imgs.iter().find(|i| i.0 == "PTX").expect("PTX").2;
    // add_index, scale, and fill for f32 and u64
    assert_eq!(kernels.len(), 4, "{kernels:?}");
    assert!(kernels.iter().any(|k| k.starts_with("__offload_kernel_ws_kernels_add_index_")), "{kernels:?}");
}

/// `--target amdgcn-amd-amdhsa`: a bin crate becomes an AMD GPU code object
/// (`<crate>.elf`), with a kernel descriptor (`.kd`) per kernel and the
/// architecture in the ELF header; the host binary embeds it. One
/// architecture here (gfx942, whose device build `one_binary_…` shares);
/// offload-linker's `amd_code_objects_name_their_architecture` links a
/// kernel for gfx90a, gfx942 and gfx1100.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn amd_code_objects_for_a_bin_crate() {
    use object::{Object, ObjectSymbol};
    let f = Fixture::renamed("bin-only", "amd");
    // EF_AMDGPU_MACH_AMDGCN_GFX942 (LLVM's ELF.h).
    let (arch, mach) = ("gfx942", 0x4c);
    let out = f.offload(&["build", "--target", "amdgcn-amd-amdhsa", "--arch", arch]);
    out.assert_success();
    assert!(out.stderr.contains(&format!("(AMD GPU code object {arch}; 2 kernel(s))")), "{}", out.stderr);
    let elf_path =
        f.target_dir().join(format!("offload/amdgcn-amd-amdhsa-{arch}/amdgcn-amd-amdhsa/debug/{}.elf", f.name));
    let bytes = std::fs::read(&elf_path).unwrap_or_else(|e| panic!("{}: {e}", elf_path.display()));
    let elf = object::File::parse(&*bytes).unwrap();
    let object::FileFlags::Elf { e_flags, .. } = elf.flags() else { panic!("not ELF") };
    // e_machine is EM_AMDGPU (224)
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 224);
    assert_eq!(e_flags & 0xff, mach, "{arch}: e_flags {e_flags:#x}");
    let kd: Vec<String> =
        elf.symbols().filter_map(|s| s.name().ok().filter(|n| n.ends_with(".kd")).map(String::from)).collect();
    assert_eq!(kd.len(), 2, "{arch}: {kd:?}");
    let prefix = format!("__offload_kernel_{}_", f.name);
    assert!(kd.iter().all(|k| k.starts_with(&prefix)), "{kd:?}");
    // llvm-readelf, as a user would check it.
    if let Some(readelf) = (22..30)
        .map(|m| format!("llvm-readelf-{m}"))
        .find(|t| std::process::Command::new(t).arg("--version").output().is_ok())
    {
        let h = std::process::Command::new(&readelf).arg("-h").arg(&elf_path).output().unwrap();
        let h = String::from_utf8_lossy(&h.stdout);
        assert!(h.contains("EM_AMDGPU") && h.contains(arch), "{h}");
    }
    let images = embedded_images(&f.host_exe("debug", &f.name));
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!((images[0].0.as_str(), images[0].1.as_str()), ("AMD GPU code object", arch));
    assert_eq!(images[0].2.len(), 2);
}

/// A kernel defined inside host-only code has no device entry point: the
/// build fails and names it, instead of the launch failing on a GPU.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn kernels_missing_from_the_image_fail_the_build() {
    let f = Fixture::new("host-kernel");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("1 kernel(s) that `fixture_host_kernel` can launch are missing from its device image"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("__offload_kernel_fixture_host_kernel_inner_"), "{}", out.stderr);
    assert!(out.stderr.contains("defined at src/main.rs:13"), "{}", out.stderr);
    assert!(out.stderr.contains("define it at module level"), "{}", out.stderr);
    // With a generic kernel the build runs a collect round first, which
    // links the binary without the check: the next build must still fail.
    f.edit("src/main.rs", |s| {
        s.replace(
            "#[offload::host]\nfn main() {",
            "#[kernel]\nfn fill<T: Copy>(k: T, v: &mut [T]) {\n    for (_, x) in v.grid_stride() {\n        *x = k;\n    }\n}\n\n\
             #[offload::host]\nfn main() {\n    fill(for_len(4), 1u8, &mut [0u8; 4]).unwrap();",
        )
    });
    for round in 0..2 {
        let out = f.offload(&["build", "--arch", "sm_90"]);
        assert_ne!(out.code, 0, "build {round}: {}", out.stderr);
        assert!(
            out.stderr.contains("1 kernel(s) that `fixture_host_kernel` can launch are missing"),
            "build {round}: {}",
            out.stderr
        );
    }
}

/// Several architectures, NVIDIA and AMD, in one binary: one bundle with a
/// PTX (and cubin) per `sm_*` and a code object per `gfx*`; the runtime
/// picks the image for the GPU it finds (`offload_image::select`, tested
/// there), and the host fallback still runs.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn one_binary_carries_images_for_several_architectures() {
    let f = Fixture::renamed("bin-only", "multi");
    let out = f.offload(&["build", "--arch", "sm_80,sm_90", "--arch", "gfx942"]);
    out.assert_success();
    let images = embedded_images(&f.host_exe("debug", &f.name));
    let mut kinds: Vec<(String, String)> = images.iter().map(|i| (i.0.clone(), i.1.clone())).collect();
    kinds.sort();
    let mut want = vec![
        ("AMD GPU code object".to_string(), "gfx942".to_string()),
        ("PTX".into(), "sm_80".into()),
        ("PTX".into(), "sm_90".into()),
    ];
    if require_ptxas() {
        want.push(("cubin".into(), "sm_80".into()));
        want.push(("cubin".into(), "sm_90".into()));
    }
    want.sort();
    if !require_ptxas() {
        kinds.retain(|k| k.0 != "cubin");
    }
    assert_eq!(kinds, want);
    // Every image holds both kernels.
    assert!(images.iter().all(|i| i.2.len() == 2), "{images:?}");
    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "{}", run.stdout);
}

/// Generic kernels: `cargo offload` finds the instantiations the host code
/// uses (f32, f64, u32, a user struct; two type parameters), compiles one
/// device entry point each, and the binary launches them; a new
/// instantiation is picked up by the next build; one that cannot exist on
/// the device is an error at the user's call.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn generic_kernels_are_instantiated_for_the_types_host_code_uses() {
    // (A fresh copy: a workspace root of its own, so no instantiation lists
    // from an earlier run.)
    let f = Fixture::new("generic");
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    assert!(
        out.stderr.contains(
            "Generic kernel at src/main.rs:23 instantiated for <f32>, <f64>, <fixture_generic::geom::Vec3>, <u32>"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Generic kernel at src/main.rs:34 instantiated for <f32, f64>, <u16, u32>"),
        "{}",
        out.stderr
    );
    let ptx = f.ptx("sm_90", "debug", "fixture_generic");
    let entries = offload_image::ptx_entries(&ptx);
    let instances = |kernel: &str| -> (String, usize) {
        let of: Vec<&String> =
            entries.iter().filter(|e| e.starts_with(&format!("__offload_kernel_fixture_generic_{kernel}_"))).collect();
        (of.first().map(|e| e.rsplit_once('_').unwrap().0.to_string()).unwrap_or_default(), of.len())
    };
    let (scale, n) = instances("scale");
    assert_eq!(n, 4, "{entries:?}");
    for ty in ["(f32,)", "(f64,)", "(u32,)", "(fixture_generic::geom::Vec3,)"] {
        assert!(entries.contains(&offload_image::symbol::instance(&scale, ty)), "scale::<{ty}>: {entries:?}");
    }
    let (widen, n) = instances("widen");
    assert_eq!(n, 2, "{entries:?}");
    for ty in ["(f32, f64)", "(u16, u32)"] {
        assert!(entries.contains(&offload_image::symbol::instance(&widen, ty)), "widen::<{ty}>: {entries:?}");
    }
    // Each launch against a host computation in f64 / u64.
    let n = 1000u64;
    let sa: f64 = (0..n).map(|i| (i as f32 * 0.25 * 3.0) as f64).sum();
    let sb: f64 = (0..n).map(|i| i as f64 * 0.125 * -2.0).sum();
    let sc: u64 = (0..n).map(|i| i * 7).sum();
    let sp: f64 = (0..n).map(|i| (2.0 * i as f32 + 0.5 - 4.0 * i as f32) as f64).sum();
    let sw: u64 = (0..n as u16).map(|i| i.wrapping_mul(977) as u64).sum();
    let want = format!("f32={sa} f64={sb} u32={sc} vec3={sp} u16->u32={sw} f32->f64={sa}");
    let run = f.run_exe("debug", "fixture_generic", &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_eq!(run.stdout.trim(), want);

    // Nothing changed: no device work, no new instantiation.
    let again = f.offload(&["build", "--arch", "sm_90"]);
    again.assert_success();
    assert!(
        again.stderr.contains("Device up to date: nothing to compile (nvptx64-nvidia-cuda sm_90; "),
        "{}",
        again.stderr
    );
    assert!(!again.stderr.contains("Generic"), "{}", again.stderr);

    // A new instantiation in host code: found and compiled by the next build.
    f.edit("src/main.rs", |s| {
        s.replace(
            "    let sa: f64",
            "    let mut e: Vec<i64> = (0..10).collect();\n    scale(for_len(10), -5i64, &mut e).unwrap();\n    \
             println!(\"i64={}\", e.iter().sum::<i64>());\n    let sa: f64",
        )
    });
    let out = f.offload(&["run", "--arch", "sm_90"]);
    out.assert_success();
    assert!(out.stderr.contains("Generic kernel at src/main.rs:23 instantiated for <i64>"), "{}", out.stderr);
    assert!(offload_image::ptx_entries(&f.ptx("sm_90", "debug", "fixture_generic"))
        .contains(&offload_image::symbol::instance(&scale, "(i64,)")));
    assert_eq!(
        out.stdout.lines().next(),
        Some(format!("i64={}", (0..10).map(|i| -5 * i).sum::<i64>()).as_str()),
        "{}",
        out.stdout
    );

    // An instantiation that cannot exist on the device: an error at the call.
    f.edit("src/main.rs", |s| {
        s.replace("    let sa: f64", "    let mut s = vec![String::new()];\n    scale(for_len(1), String::new(), &mut s).unwrap();\n    let sa: f64")
    });
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("`String` cannot be moved to the device"), "{}", out.stderr);
    assert!(out.stderr.contains("scale(for_len(1), String::new(), &mut s)"), "{}", out.stderr);
}

/// An instantiation that only the unit tests use, with a type that exists
/// only under `cfg(test)`, is compiled into the test binary's image and
/// does not break the binary's own build afterwards.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn test_only_instantiations_stay_in_the_test_build() {
    let f = Fixture::new("generic-test");
    let run = |f: &Fixture| {
        let out = f.offload(&["run", "--arch", "sm_90"]);
        out.assert_success();
        assert_eq!(out.stdout.trim(), "sum=700");
    };
    run(&f);
    let out = f.offload(&["test", "--arch", "sm_90"]);
    out.assert_success();
    assert!(out.stdout.contains("test tests::fill_with_a_test_only_type ... ok"), "{}", out.stdout);
    assert!(out.stderr.contains("instantiated for <fixture_generic_test::tests::Pair>"), "{}", out.stderr);
    run(&f);
    // The binary's image: `fill::<u32>` only.
    let imgs = embedded_images(&f.host_exe("debug", "fixture_generic_test"));
    let ptx = imgs.iter().find(|i| i.0 == "PTX").expect("a PTX image");
    assert_eq!(
        ptx.2.iter().filter(|k| k.starts_with("__offload_kernel_fixture_generic_test_fill_")).count(),
        1,
        "{imgs:?}"
    );
}

/// Kernels of a dependency that cargo fetches (a git repository here; a
/// crates.io crate is handled the same way: not a path, not a workspace
/// member, lints capped) are in the image of the binary that uses it, a
/// generic one instantiated for the binary's types.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn kernels_of_a_fetched_dependency_are_in_the_image() {
    let f = Fixture::new("git-dep");
    let lib = f.dir.join("gpu-lib");
    for args in
        [&["init", "-q"][..], &["add", "."], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "v1"]]
    {
        let st = std::process::Command::new("git")
            .args(args)
            .current_dir(&lib)
            .status()
            .expect("git is needed for this test");
        assert!(st.success(), "git {args:?}");
    }
    f.edit("Cargo.toml", |s| s.replace("@GITDEP@", &format!("file://{}", lib.display())));
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    assert!(out.stderr.contains("Compiling gpu-lib v0.1.0 (file://"), "{}", out.stderr);
    let imgs = embedded_images(&f.host_exe("debug", "fixture_git_dep"));
    let kernels = &imgs.iter().find(|i| i.0 == "PTX").unwrap().2;
    let axpy = kernels.iter().filter(|k| k.starts_with("__offload_kernel_gpu_lib_axpy_")).count();
    let fills: Vec<&String> = kernels.iter().filter(|k| k.starts_with("__offload_kernel_gpu_lib_fill_")).collect();
    assert_eq!((axpy, fills.len()), (1, 2), "{kernels:?}");
    let base = fills[0].rsplit_once('_').unwrap().0;
    for ty in ["(i32,)", "(f64,)"] {
        assert!(kernels.contains(&offload_image::symbol::instance(base, ty)), "fill::<{ty}>: {kernels:?}");
    }
    assert!(kernels.iter().any(|k| k.starts_with("__offload_kernel_fixture_git_dep_square_")), "{kernels:?}");
    let run = f.run_exe("debug", "fixture_git_dep", &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    let sy: f64 = (0..500).map(|i| (1.0f32 + 0.5 * i as f32) as f64).sum();
    assert_eq!(run.stdout.trim(), format!("axpy={sy} fill_i32={} fill_square_f64={}", -4 * 7, 1.5f64 * 1.5 * 9.0));
}

/// Cargo's target selection and features reach both passes: `--bin`,
/// `--example`, `--lib`, `--test`, `--bench`, `--features`,
/// `--no-default-features`, `--message-format`, `-v`; each binary gets its
/// own image with exactly its kernels. All in the dev profile, whose
/// dependencies the other tests share (a profile's build is its own
/// directory: `tests/dry_run.rs` checks that `--profile` reaches both
/// passes).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn every_target_kind_with_features_and_profiles() {
    let f = Fixture::new("kinds");
    let sum = |step: u64| (0..1000u64).map(|i| i + step).sum::<u64>();
    let squares = |step: u64| (0..1000u64).map(|i| (i + step) * (i + step)).sum::<u64>();
    let host = [("OFFLOAD_DEVICE", "host")];

    // --bin: only that binary; default feature `double` on.
    let out = f.offload_env(&["run", "--arch", "sm_90", "--bin", "tool"], &host);
    out.assert_success();
    assert_eq!(out.stdout.trim(), format!("tool sum={}", sum(2)));
    assert!(out.stderr.contains("Embedding device image in bin `tool` (PTX sm_90"), "{}", out.stderr);
    assert!(!out.stderr.contains("`demo`"), "the example is not built: {}", out.stderr);
    let kernels = |exe: &std::path::Path| -> Vec<String> {
        let imgs = embedded_images(exe);
        let mut k: Vec<String> = imgs
            .iter()
            .find(|i| i.0 == "PTX")
            .unwrap()
            .2
            .iter()
            .map(|s| s.rsplit_once('_').unwrap().0.to_string())
            .collect();
        k.sort();
        k
    };
    assert_eq!(
        kernels(&f.host_exe("debug", "tool")),
        ["__offload_kernel_fixture_kinds_bump", "__offload_kernel_tool_square"]
    );

    // Features: off, and an extra one, in both passes.
    let out = f.offload_env(
        &["run", "--arch", "sm_90", "--bin", "tool", "--no-default-features", "--features", "squares"],
        &host,
    );
    out.assert_success();
    assert_eq!(out.stdout.trim(), format!("tool sum={}\ntool squares={}", sum(1), squares(1)));

    // --example, with its own kernel.
    let out = f.offload_env(&["run", "--arch", "sm_90", "--example", "demo"], &host);
    out.assert_success();
    assert_eq!(out.stdout.trim(), format!("demo sum={}", -(0..300i64).sum::<i64>()));
    assert!(out.stderr.contains("Embedding device image in example `demo`"), "{}", out.stderr);
    assert_eq!(
        kernels(&f.target_dir().join("debug/examples/demo")),
        ["__offload_kernel_demo_negate", "__offload_kernel_fixture_kinds_bump"]
    );

    // --lib: the unit tests only, with their #[cfg(test)] kernel.
    let out = f.offload_env(&["test", "--arch", "sm_90", "--lib"], &host);
    out.assert_success();
    assert!(out.stdout.contains("test tests::unit_kernels_run ... ok"), "{}", out.stdout);
    assert!(!out.stdout.contains("integration_kernels_run"), "{}", out.stdout);
    // --test: that integration test only.
    let out = f.offload_env(&["test", "--arch", "sm_90", "--test", "it"], &host);
    out.assert_success();
    assert!(out.stdout.contains("test integration_kernels_run ... ok"), "{}", out.stdout);
    assert!(!out.stdout.contains("unit_kernels_run"), "{}", out.stdout);
    // --bench: a harness-less bench (in the dev profile).
    let out = f.offload_env(&["bench", "--arch", "sm_90", "--bench", "b", "--profile", "dev"], &host);
    out.assert_success();
    assert!(out.stdout.contains("bench inc: 10 launches, sum=40960"), "{}", out.stdout);
    assert!(out.stderr.contains("Embedding device image in bench `b`"), "{}", out.stderr);
    let bench_exe = out
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Running benches/b.rs ("))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(
        kernels(std::path::Path::new(bench_exe)),
        ["__offload_kernel_b_inc", "__offload_kernel_fixture_kinds_bump"]
    );

    // -v prints the commands.
    let out = f.offload(&["build", "--arch", "sm_90", "--bin", "tool", "-v"]);
    out.assert_success();
    for pass in ["device pass:", "host pass:"] {
        assert!(
            out.stderr.contains(pass) && out.stderr.contains("--bin tool"),
            "-v prints the commands: {}",
            out.stderr
        );
    }

    // --message-format json: the host pass's messages, for tools.
    let out = f.offload(&["build", "--arch", "sm_90", "--bin", "tool", "--message-format", "json"]);
    out.assert_success();
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with('{') && l.contains("\"reason\":\"compiler-artifact\"") && l.contains("\"tool\"")),
        "{}",
        out.stdout
    );
}

/// The real `llc` the device pass would use (from `--dry-run -v`'s
/// environment listing).
fn real_llc(f: &Fixture) -> String {
    let out = f.offload(&["build", "--arch", "sm_90", "--dry-run"]);
    out.assert_success();
    out.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("OFFLOAD_LLC="))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{}", out.stdout))
        .to_string()
}

/// A script that answers `--version` and `-mcpu=help`/`-mattr=help` with
/// the real llc and otherwise runs `body` (sh).
fn fake_llc(f: &Fixture, name: &str, body: &str) -> std::path::PathBuf {
    let script = f.dir.join(name);
    let text = format!("#!/bin/sh\ncase \"$*\" in *--version*|*help*) exec '{}' \"$@\" ;; esac\n{body}\n", real_llc(f));
    std::fs::write(&script, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

/// An LLVM abort in the device link is one clear error: which tool and
/// step, LLVM's message, the function (demangled), where the full output
/// is; no stack dump and no screen of linker arguments. f128 arithmetic,
/// which llc cannot lower for the GPU, names the user's function.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn llvm_aborts_and_f128_are_clear_errors() {
    let f = Fixture::renamed("bin-only", "aborts");
    let llc = fake_llc(
        &f,
        "aborting-llc",
        "echo 'LLVM ERROR: Cannot select: t7: i32 = fake' >&2\necho 'PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/' >&2\n\
         echo 'Stack dump:' >&2\necho \"2.\tRunning pass 'NVPTX DAG->DAG Pattern Instruction Selection' on function '@_ZN16fixture_bin_only4axpy17h0123456789abcdefE'\" >&2\n\
         echo ' #0 0x00007f7236fa65fa llvm::sys::PrintStackTrace(llvm::raw_ostream&, int)' >&2\nkill -ABRT $$",
    );
    f.edit("src/main.rs", |s| s + "\n// llc aborts\n");
    let out = f.offload_env(&["build", "--arch", "sm_90"], &[("OFFLOAD_LLC", llc.to_str().unwrap())]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let e = &out.stderr;
    assert!(
        e.contains(&format!(
            "error: device link of `{}` failed: llc failed while generating PTX, in function `fixture_bin_only::axpy`",
            f.name
        )),
        "{e}"
    );
    assert!(e.contains("SIGABRT"), "{e}");
    assert!(e.contains("\n  LLVM ERROR: Cannot select: t7: i32 = fake"), "{e}");
    assert!(e.contains("llc's full output: ") && e.contains(".llc.log"), "{e}");
    assert!(!e.contains("PrintStackTrace") && !e.contains("PLEASE submit"), "no stack dump: {e}");
    assert!(!e.contains("--export-symbol"), "no linker command line: {e}");

    // f128: the real llc aborts; the error names the function.
    f.edit("src/main.rs", |s| {
        "#![cfg_attr(offload_device, feature(f128))]\n".to_string()
            + &s
            + "\n#[cfg(offload_device)]\n#[inline(never)]\nfn quad_mul(a: u64, b: u64) -> u64 {\n    \
               (f128::from_bits(a as u128) * f128::from_bits((b as u128) << 64)).to_bits() as u64\n}\n\
               #[cfg(not(offload_device))]\nfn quad_mul(a: u64, b: u64) -> u64 { a ^ b }\n\
               #[kernel]\nfn quad(q: &mut [u64]) {\n    if let Some((i, qi)) = q.at_thread() {\n        *qi = quad_mul(i as u64, *qi);\n    }\n}\n"
    });
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let e = &out.stderr;
    assert!(
        e.contains(&format!(
            "error: device link of `{0}` failed: f128 is not supported in device code, used in `{0}::quad_mul`",
            f.name
        )),
        "{e}"
    );
    assert!(e.contains("keep f128 arithmetic in host code"), "{e}");
    assert!(!e.contains("LLVM ERROR") && !e.contains("Stack dump"), "{e}");

    // f128 in the kernel's own body, which is inlined into its entry point
    // `__offload_kernel_<crate>_quad_<hash>`: named as written.
    f.edit("src/main.rs", |s| {
        s.replace(
            "        *qi = quad_mul(i as u64, *qi);\n",
            "        #[cfg(offload_device)]\n        {\n            *qi = (f128::from_bits(i as u128) * f128::from_bits((*qi as u128) << 64)).to_bits() as u64;\n        }\n",
        )
    });
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let e = &out.stderr;
    assert!(
        e.contains(&format!(
            "error: device link of `{0}` failed: f128 is not supported in device code, used in `{0}::quad`",
            f.name
        )),
        "{e}"
    );
    assert!(!e.contains("__offload_kernel_"), "no kernel symbol: {e}");
}

/// Two `cargo offload build`s in one directory at the same time (both
/// assembling cubins and writing image objects) both succeed, and the
/// binary is right. In a target directory of its own: each round deletes
/// the images (the cubin cache and the image objects), which in the shared
/// one are other tests' too (deleting them there failed three tests
/// running beside this one: objects and a cubin vanished mid-build).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn concurrent_builds_in_one_directory() {
    let f = Fixture::renamed("bin-only", "concurrent").own_target();
    f.offload_env(&["build", "--arch", "sm_90"], &[WITH_PTXAS]).assert_success();
    for round in 0..4 {
        // Cold cubin cache and objects: both builds write them.
        let _ = std::fs::remove_dir_all(f.target_dir().join("offload/images"));
        let builds: Vec<_> = (0..2)
            .map(|_| {
                let dir = f.dir.clone();
                let target = f.target_dir().to_str().unwrap().to_string();
                std::thread::spawn(move || {
                    offload_cmd(&dir, &["build", "--arch", "sm_90", "--target-dir", &target], &[WITH_PTXAS])
                })
            })
            .collect();
        for b in builds {
            b.join().unwrap().assert_success();
        }
        let images = embedded_images(&f.host_exe("debug", &f.name));
        assert!(images.iter().any(|i| i.0 == "PTX" && i.2.len() == 2), "round {round}: {images:?}");
        if require_ptxas() {
            assert!(images.iter().any(|i| i.0 == "cubin"), "round {round}: {images:?}");
        }
        let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
        run.assert_success();
        assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "round {round}: {}", run.stdout);
        let leftovers: Vec<_> = walk(&f.target_dir().join("offload"))
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "round {round}: {leftovers:?}");
    }
}

/// A second project's first build takes from the crate cache that the
/// first project filled what does not depend on the project: in the device
/// pass `offload`, `libm` and the proc macros, compiling only its own
/// crate; in the host pass offload's dependencies (`cudarc`, `rayon`,
/// `thiserror`, whose `include!` of a generated file is checked, …),
/// compiling only its own crate; its binary gives the right results. A
/// third project with another `-C codegen-units` for `libc` compiles
/// `libc` and what depends on it, and takes the rest from the cache.
/// Each project builds into a target directory of its own (a new
/// project's), removed at the end.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn a_second_project_takes_offload_from_the_crate_cache() {
    let a = Fixture::renamed("bin-only", "crate-cache-a").own_target();
    let b = Fixture::renamed("bin-only", "crate-cache-b").own_target();
    let args = ["build", "--arch", "sm_90", "--fast-math", "-v"];
    a.offload(&args).assert_success();
    let out = b.offload(&args);
    out.assert_success();
    let line = |out: &Output, start: &str| {
        out.stderr.lines().map(str::trim).find(|l| l.starts_with(start)).unwrap_or_default().to_string()
    };
    let names = |line: &str| -> Vec<String> {
        line.rsplit_once("): ").map(|(_, n)| n.split(", ").map(String::from).collect()).unwrap_or_default()
    };
    let device = line(&out, "Device ");
    assert!(device.starts_with("Device compiled 1 crate, took "), "only the project's own crate: {}", out.stderr);
    let cached = names(&line(&out, "Cached "));
    for krate in ["offload", "libm", "offload_macros", "syn"] {
        assert!(cached.iter().any(|n| n == krate), "{krate} from the crate cache: {cached:?}\n{}", out.stderr);
    }
    assert!(!cached.contains(&b.name), "the project's own crate is compiled: {cached:?}");
    let host = line(&out, "Host took ");
    let from_cache = names(&host);
    for krate in ["offload", "offload_macros", "cudarc", "rayon", "thiserror", "thiserror_impl", "libc", "syn"] {
        assert!(from_cache.iter().any(|n| n == krate), "host: {krate} from the crate cache: {host}\n{}", out.stderr);
    }
    assert!(!from_cache.contains(&b.name), "host: the project's own crate is compiled: {host}");
    let run = b.run_exe("debug", &b.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_bin_only_output(&run.stdout);

    // A third project with other codegen units for libc (a number no
    // earlier run used): libc's arguments change, and with its bytes those
    // of the crates above it; each is compiled, the rest taken.
    let c = Fixture::renamed("bin-only", "crate-cache-c").own_target();
    let units = format!("profile.dev.package.libc.codegen-units={}", 1000 + std::process::id() % 100_000);
    let mut flagged = args.to_vec();
    flagged.extend(["--config", units.as_str()]);
    let out = c.offload(&flagged);
    out.assert_success();
    let host = line(&out, "Host took ");
    let from_cache = names(&host);
    for (krate, cached) in
        [("libc", false), ("corosensei", false), ("offload", false), ("thiserror", true), ("rayon", true)]
    {
        assert_eq!(from_cache.iter().any(|n| n == krate), cached, "host: {krate}: {host}\n{}", out.stderr);
    }
    let run = c.run_exe("debug", &c.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert_bin_only_output(&run.stdout);
    for f in [&a, &b, &c] {
        let _ = std::fs::remove_dir_all(f.target_dir());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Ctrl-C during the device link (SIGINT to the whole process group, as a
/// terminal sends it), and SIGINT to llc alone: `error: build interrupted`,
/// exit code 130, nothing else; the next build succeeds.
#[cfg(unix)]
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn interrupted_builds_say_so_and_the_next_build_succeeds() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let f = Fixture::renamed("bin-only", "interrupted");
    let marker = f.dir.join("llc-started");
    let llc =
        fake_llc(&f, "slow-llc", &format!("echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'\nexec sleep 60", marker.display()));
    for (round, whole_group) in [(0, true), (1, false)] {
        let _ = std::fs::remove_file(&marker);
        f.edit("src/main.rs", |s| s + &format!("\n// round {round}\n"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-offload"));
        cmd.args(["offload", "build", "--arch", "sm_90", "--target-dir", f.target_dir().to_str().unwrap()])
            .current_dir(&f.dir)
            .env("CARGO_TERM_COLOR", "never")
            .env("OFFLOAD_LLC", &llc)
            .env(CACHE_VAR, cache_dir())
            .env_remove("OFFLOAD_DEVICE")
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = std::thread::spawn(move || {
            std::io::BufReader::new(stderr).lines().map_while(Result::ok).collect::<Vec<_>>()
        });
        let start = std::time::Instant::now();
        while !marker.is_file() {
            assert!(start.elapsed().as_secs() < 300, "llc never started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let target = if whole_group {
            format!("-{}", child.id())
        } else {
            std::fs::read_to_string(&marker).unwrap().trim().to_string()
        };
        let st = std::process::Command::new("kill").args(["-INT", "--", &target]).status().unwrap();
        assert!(st.success());
        let status = child.wait().unwrap();
        let lines = lines.join().unwrap();
        assert_eq!(status.code(), Some(130), "round {round}: {lines:#?}");
        assert_eq!(lines.last().map(String::as_str), Some("error: build interrupted"), "round {round}: {lines:#?}");
        let noise: Vec<&String> = lines
            .iter()
            .filter(|l| {
                !l.trim_start().starts_with("Compiling ")
                    && !l.starts_with("note: ")
                    && *l != "error: build interrupted"
            })
            .collect();
        assert!(noise.is_empty(), "round {round}: only status lines and the error: {lines:#?}");
    }
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert!(run.stdout.starts_with("y[0]=1000 y[999]=1000 "), "{}", run.stdout);
}

/// One PTX instruction of a function body, for the ordering checks.
struct Inst<'a> {
    /// The opcode with its qualifiers (`atom.acq_rel.sys.global.cas.b32`).
    op: &'a str,
    /// Guarded by a predicate (`@%p1 …`).
    predicated: bool,
    /// A branch's target label.
    target: Option<&'a str>,
}

impl Inst<'_> {
    /// `sc` or `acq_rel` for an unpredicated fence.
    fn fence(&self) -> Option<&'static str> {
        if self.predicated || !self.op.starts_with("fence.") {
            return None;
        }
        Some(if self.op.starts_with("fence.sc.") { "sc" } else { "acq_rel" })
    }
    /// A memory access other than a parameter or the stack: `'L'` load,
    /// `'S'` store, `'A'` atom/red.
    fn access(&self) -> Option<char> {
        let space = |q: &str| self.op.split('.').any(|p| p == q);
        if space("param") || space("local") {
            return None;
        }
        match self.op.split('.').next() {
            Some("ld") => Some('L'),
            Some("st") => Some('S'),
            Some("atom" | "red") => Some('A'),
            _ => None,
        }
    }
    /// The `.sem` qualifier; an `atom` without one is `relaxed` (PTX ISA,
    /// "atom"), a plain `ld`/`st` is not atomic (`None`).
    fn sem(&self) -> Option<&str> {
        let sem =
            ["acq_rel", "acquire", "release", "relaxed"].into_iter().find(|s| self.op.split('.').any(|p| p == *s));
        match (sem, self.access()) {
            (Some(s), _) => Some(s),
            (None, Some('A')) => Some("relaxed"),
            _ => None,
        }
    }
}

/// The instructions of a PTX function body and, per instruction, its
/// successors in the control-flow graph (fall-through, branch targets;
/// none after `ret`/`exit`).
fn ptx_cfg(body: &str) -> (Vec<Inst<'_>>, Vec<Vec<usize>>) {
    let mut insts = Vec::new();
    let mut labels = std::collections::HashMap::new();
    for line in body.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if line.is_empty() || line == "{" || line == "}" || line.starts_with('.') {
            continue;
        }
        if let Some(label) = line.strip_suffix(':') {
            labels.insert(label, insts.len());
            continue;
        }
        let (predicated, rest) = match line.strip_prefix('@') {
            Some(r) => (true, r.split_once(char::is_whitespace).map_or("", |x| x.1).trim_start()),
            None => (false, line),
        };
        let mut words = rest.split_whitespace();
        let op = words.next().unwrap_or("").trim_end_matches(';');
        let target = op.starts_with("bra").then(|| words.next().unwrap_or("").trim_end_matches(';'));
        insts.push(Inst { op, predicated, target });
    }
    let succ = (0..insts.len())
        .map(|i| {
            let inst = &insts[i];
            let mut s = Vec::new();
            if let Some(t) = inst.target {
                s.extend(labels.get(t).copied());
            }
            let ends = matches!(inst.op, "ret" | "exit") || (inst.target.is_some() && !inst.predicated);
            if !ends && i + 1 < insts.len() {
                s.push(i + 1);
            }
            s
        })
        .collect();
    (insts, succ)
}

/// Whether every path from `start` along `next` (successors or
/// predecessors) reaches a fence accepted by `good` before the end of the
/// function or a memory access for which `blocks` holds; a path that comes
/// back to `x` (a retry loop) counts as reaching it.
fn every_path_fenced(
    insts: &[Inst<'_>],
    next: &[Vec<usize>],
    x: usize,
    good: &dyn Fn(&str) -> bool,
    blocks: &dyn Fn(&Inst<'_>) -> bool,
) -> bool {
    if next[x].is_empty() {
        return false;
    }
    let mut seen = vec![false; insts.len()];
    let mut stack: Vec<usize> = next[x].clone();
    while let Some(i) = stack.pop() {
        if i == x || std::mem::replace(&mut seen[i], true) {
            continue;
        }
        match insts[i].fence() {
            Some(f) if good(f) => continue,
            // A weaker fence (acq_rel where sc is needed) does not end it.
            Some(_) => {}
            None if blocks(&insts[i]) => return false,
            None => {}
        }
        if next[i].is_empty() {
            return false;
        }
        stack.extend(&next[i]);
    }
    true
}

/// Checks the orderings of one `ord_<op>_<ordering>[_<failure>]` kernel of
/// `tests/device-model` (see its `orderings` module) in its PTX body; at
/// least `min` instructions must perform the operation. Each must be
/// - *release* (for `Release`, `AcqRel`, `SeqCst` successes and stores):
///   `.release`/`.acq_rel` itself, or on every path to it a fence with no
///   store or atom after it (PTX ISA, "Release and Acquire Patterns": a
///   fence followed by a strong write);
/// - *acquire* (`Acquire`, `AcqRel`, `SeqCst`, and compare-exchange
///   failures `Acquire`/`SeqCst`): `.acquire`/`.acq_rel` itself, or on
///   every path from it a fence before any other memory access;
/// - for `SeqCst`, on every path to it a `fence.sc` with no store or atom
///   after it (the PTX ISA's mapping of a sequentially consistent
///   operation);
/// - at `.sys` scope, or for an `atom` no scope (`.gpu`, LLVM 22).
///
/// A kernel with only `Relaxed` orderings has no fence. Returns the errors.
fn check_ordering_kernel(kernel: &str, body: &str, min: usize) -> Vec<String> {
    let words: Vec<&str> = kernel.split('_').collect();
    let orders = ["relaxed", "acquire", "release", "acqrel", "seqcst"];
    let n_orders = words.iter().rev().take_while(|w| orders.contains(w)).count();
    let (op, ords) = words.split_at(words.len() - n_orders);
    let op = op.join("_");
    let (success, failure) = (ords[0], ords.get(1).copied().unwrap_or("relaxed"));
    let kind = match op.as_str() {
        "load" => 'L',
        "store" => 'S',
        _ => 'A',
    };
    let release = kind != 'L' && matches!(success, "release" | "acqrel" | "seqcst");
    let acquire =
        kind != 'S' && (matches!(success, "acquire" | "acqrel" | "seqcst") || matches!(failure, "acquire" | "seqcst"));
    let sc = success == "seqcst" || failure == "seqcst";
    let (insts, succ) = ptx_cfg(body);
    let mut pred = vec![Vec::new(); insts.len()];
    for (i, s) in succ.iter().enumerate() {
        for &j in s {
            pred[j].push(i);
        }
    }
    let mut errors = Vec::new();
    for f in insts.iter().filter(|i| i.op.starts_with("fence")) {
        if !release && !acquire && !sc {
            errors.push(format!("{kernel}: a relaxed operation has a fence `{}`", f.op));
        }
        if !f.op.ends_with(".sys") {
            errors.push(format!("{kernel}: fence `{}` is not at system scope", f.op));
        }
    }
    let checked: Vec<usize> =
        (0..insts.len()).filter(|&i| insts[i].access() == Some(kind) && insts[i].sem().is_some()).collect();
    if checked.len() < min {
        let ops: Vec<&str> = insts.iter().map(|i| i.op).collect();
        errors.push(format!(
            "{kernel}: {} instructions perform the operation, expected at least {min}: {ops:?}",
            checked.len()
        ));
    }
    let writes = |i: &Inst<'_>| matches!(i.access(), Some('S' | 'A'));
    let any = |i: &Inst<'_>| i.access().is_some();
    for &x in &checked {
        let inst = insts[x].op;
        let sem = insts[x].sem().unwrap_or("relaxed");
        if release && !matches!(sem, "release" | "acq_rel") && !every_path_fenced(&insts, &pred, x, &|_| true, &writes)
        {
            errors.push(format!("{kernel}: `{inst}` is not a release (no .release and no fence before it)"));
        }
        if acquire && !matches!(sem, "acquire" | "acq_rel") && !every_path_fenced(&insts, &succ, x, &|_| true, &any) {
            errors.push(format!("{kernel}: `{inst}` is not an acquire (no .acquire and no fence after it)"));
        }
        if sc && !every_path_fenced(&insts, &pred, x, &|f| f == "sc", &writes) {
            errors.push(format!("{kernel}: `{inst}` is SeqCst without a fence.sc before it"));
        }
        let scoped = inst.split('.').any(|p| p == "sys");
        if !scoped && (kind != 'A' || inst.split('.').any(|p| matches!(p, "cta" | "gpu" | "cluster"))) {
            errors.push(format!("{kernel}: `{inst}` is not at system scope"));
        }
    }
    errors
}

/// The checker itself rejects what LLVM 22 emitted before the device link
/// fenced read-modify-writes, and accepts the fixed forms, fences in other
/// blocks included.
#[test]
fn ordering_checker_tells_right_from_wrong() {
    let dropped = "\tatom.global.add.u32 \t%r1, [%rd1], 1;\n\tret;\n";
    assert_eq!(check_ordering_kernel("fetch_add_acqrel", dropped, 1).len(), 2);
    assert_eq!(check_ordering_kernel("fetch_add_seqcst", dropped, 1).len(), 3);
    assert!(check_ordering_kernel("fetch_add_relaxed", dropped, 1).is_empty());
    assert_eq!(check_ordering_kernel("fetch_add_relaxed", dropped, 2).len(), 1, "too few instructions");
    let fenced = "\tfence.sc.sys;\n\tatom.global.add.u32 \t%r1, [%rd1], 1;\n\tfence.acq_rel.sys;\n\tret;\n";
    assert!(check_ordering_kernel("fetch_add_seqcst", fenced, 1).is_empty());
    assert_eq!(check_ordering_kernel("fetch_add_relaxed", fenced, 1).len(), 2, "fences in a relaxed kernel");
    let weak_leading = "\tfence.acq_rel.sys;\n\tatom.global.add.u32 \t%r1, [%rd1], 1;\n\tfence.acq_rel.sys;\n\tret;\n";
    assert_eq!(check_ordering_kernel("fetch_add_seqcst", weak_leading, 1).len(), 1, "no fence.sc");
    let between = "\tfence.acq_rel.sys;\n\tst.global.b32 \t[%rd2], %r3;\n\tatom.global.add.u32 \t%r1, [%rd1], 1;\n\tld.global.b32 \t%r4, [%rd3];\n\tfence.acq_rel.sys;\n\tret;\n";
    assert_eq!(check_ordering_kernel("fetch_add_acqrel", between, 1).len(), 2, "accesses between fence and atom");
    let sem = "\tfence.sc.sys;\n\tatom.acquire.sys.global.cas.b64 \t%rd2, [%rd1], %rd3, %rd4;\n\tret;\n";
    assert!(check_ordering_kernel("compare_exchange_weak_relaxed_seqcst", sem, 1).is_empty());
    assert!(check_ordering_kernel("compare_exchange_weak_release_relaxed", sem, 1).is_empty(), "fence before");
    let loop_ = "\tld.relaxed.sys.global.b32 \t%r1, [%rd1];\n$L__BB0_1:\n\tatom.acq_rel.gpu.global.cas.b32 \t%r2, [%rd1], %r1, %r3;\n\tret;\n";
    assert_eq!(check_ordering_kernel("fetch_update_acqrel_acquire", loop_, 1).len(), 1, "device scope");
    let stores = "\tfence.sc.sys;\n\tst.release.sys.global.b32 \t[%rd1], %r1;\n\tst.relaxed.sys.global.b8 \t[%rd2], %rs1;\n\tret;\n";
    assert_eq!(check_ordering_kernel("store_seqcst", stores, 2).len(), 2, "second store: no release, no fence.sc");
    assert!(check_ordering_kernel("load_acquire", "\tld.acquire.sys.global.b8 \t%rs1, [%rd1];\n\tret;\n", 1).is_empty());
    // LLVM's layout of a partword compare-exchange: the fence after the
    // `atom` is in a block placed before it; one exit path lacks it.
    let partword = "\
\tfence.acq_rel.sys;
\tld.relaxed.sys.global.b8 \t%rs5, [%rd1+4];
\tbra.uni \t$L__BB7_18;
$L__BB7_21:                             // %partword.cmpxchg.end
\tfence.acq_rel.sys;
\t@%p42 bra \t$L__BB7_18;
\tbra.uni \t$L__BB7_22;
$L__BB7_18:
\tsetp.ne.b16 \t%p39, %rs3, 0;
$L__BB7_19:
\tatom.relaxed.sys.global.cas.b32 \t%r7, [%rd12], %r55, %r54;
\tsetp.eq.b32 \t%p1, %r7, %r55;
\t@%p1 bra \t$L__BB7_21;
\t@%p41 bra \t$L__BB7_19;
\tbra.uni \t$L__BB7_21;
$L__BB7_22:
\tret;
";
    assert!(check_ordering_kernel("compare_exchange_acqrel_acquire", partword, 1).is_empty());
    let leaky = partword.replace("\t@%p41 bra \t$L__BB7_19;\n", "\t@%p41 bra \t$L__BB7_22;\n");
    assert_eq!(
        check_ordering_kernel("compare_exchange_acqrel_acquire", &leaky, 1).len(),
        1,
        "an exit path without the fence"
    );
}

/// What is wrong with the GPU panic recorder in `ptx` (the functions of
/// offload's `report::gpu` and `report::core_panics`, mangled
/// `…6report3gpu…` and `…6report11core_panics…`, and the latter's
/// `__offload_panic_*`, which the device link calls in place of `core`'s
/// panics with values): each of its atomics
/// must be the GPU-scope claim of the device global
/// `__offload_global_panic_claim` (its address from `mov`/`cvta.global` of
/// that symbol), never an atomic on the record, which is mapped host
/// memory: without `CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED`
/// (x86 hosts over PCIe) the GPU has no atomics there, and
/// compute-sanitizer kills the kernel ("Invalid __global__ system-scoped
/// atomic"). Also a problem: no recorder, or a recorder without the claim.
fn panic_recorder_problems(ptx: &str) -> Vec<String> {
    const CLAIM: &str = "__offload_global_panic_claim";
    const RECORDERS: [&str; 3] = ["6report3gpu", "6report11core_panics", "__offload_panic_"];
    let lines: Vec<&str> = ptx.lines().collect();
    let mut problems = Vec::new();
    let mut claims = 0;
    let mut functions = 0;
    let mut i = 0;
    while i < lines.len() {
        let header = lines[i];
        i += 1;
        let recorder = |w: &str| RECORDERS.iter().any(|r| w.contains(r));
        if !(header.contains(".func") && recorder(header)) || header.trim_start().starts_with("//") {
            continue;
        }
        // A definition's body follows its header's `{`; a declaration ends with `;`.
        while i < lines.len() && lines[i].trim() != "{" && !lines[i].trim_end().ends_with(';') {
            i += 1;
        }
        if i >= lines.len() || lines[i].trim() != "{" {
            continue;
        }
        functions += 1;
        let name = header.split_whitespace().find(|w| recorder(w)).unwrap_or(header);
        let name = name.split('(').next().unwrap_or(name);
        // Registers set by `mov.b64 %r, sym` / `cvta.global.u64 %r, %s`.
        let mut defs: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        while i < lines.len() && lines[i] != "}" {
            let inst = lines[i].trim().trim_end_matches(';');
            i += 1;
            let Some((op, operands)) = inst.split_once(char::is_whitespace) else { continue };
            let ops: Vec<&str> = operands.split(',').map(str::trim).collect();
            if (op.starts_with("mov.") || op.starts_with("cvta.global.")) && ops.len() == 2 {
                defs.insert(ops[0], ops[1]);
            }
            if !(op.starts_with("atom.") || op.starts_with("red.")) {
                continue;
            }
            let addr = operands.split('[').nth(1).and_then(|a| a.split(']').next()).unwrap_or("");
            let mut at = addr.trim_end_matches("+0");
            for _ in 0..4 {
                match defs.get(at) {
                    Some(src) => at = src,
                    None => break,
                }
            }
            if at != CLAIM {
                problems.push(format!(
                    "{name}: `{inst}` is an atomic on `{addr}`, not on {CLAIM} (the record is host memory)"
                ));
            } else if op.split('.').any(|q| q == "sys") {
                problems.push(format!("{name}: `{inst}` claims at system scope; device memory needs only .gpu"));
            } else {
                claims += 1;
            }
        }
    }
    if functions == 0 {
        problems.push("no function of offload's report::gpu (the panic recorder) in the PTX".into());
    } else if claims == 0 {
        problems.push(format!("the panic recorder never claims {CLAIM}"));
    }
    problems
}

/// The recorder checker rejects the recorder that compare-exchanged the
/// record's own `state` (host memory; what the H200's compute-sanitizer
/// memcheck reported) and accepts the claim of the device global.
#[test]
fn panic_recorder_checker_tells_right_from_wrong() {
    let head = ".func _RNvNtNtCs1_7offload6report3gpu6record(\n\t.param .b64 p\n)\n{\n";
    let on_record = format!(
        "{head}\tld.volatile.global.b64 \t%rd3, [__offload_global_panic_slot];\n\
         \tatom.acquire.sys.cas.b32 \t%r10, [%rd3], %r11, %r12;\n\tst.release.sys.b32 \t[%rd3], %r9;\n\tret;\n}}\n"
    );
    assert_eq!(panic_recorder_problems(&on_record).len(), 2, "an atomic on the record, no claim");
    let on_claim = format!(
        "{head}\tld.volatile.global.b64 \t%rd3, [__offload_global_panic_slot];\n\
         \tmov.b64 \t%rd437, __offload_global_panic_claim;\n\tcvta.global.u64 \t%rd436, %rd437;\n\
         \tatom.acquire.gpu.cas.b32 %r10, [%rd436], %r11, %r12;\n\
         \tst.relaxed.sys.global.b32 \t[__offload_global_panic_claim], 2;\n\tst.volatile.b32 \t[%rd3], 2;\n\tret;\n}}\n"
    );
    assert!(panic_recorder_problems(&on_claim).is_empty(), "{:?}", panic_recorder_problems(&on_claim));
    let sys = on_claim.replace("atom.acquire.gpu.cas", "atom.acquire.sys.cas");
    assert_eq!(panic_recorder_problems(&sys).len(), 2, "system scope, and so no claim counted");
    let declared_only = ".func _RNvNtNtCs1_7offload6report3gpu6record\n(\n\t.param .b64 p\n)\n;\n";
    assert_eq!(panic_recorder_problems(declared_only).len(), 1, "no recorder");
}

/// The PTX of `tests/device-model`, release, sm_90, in the shared target
/// directory (built once for the tests that read it). No cubin: ptxas
/// takes minutes on the device-model image.
fn device_model_ptx() -> String {
    device_model_sm_90().assert_success();
    let path = shared_target_dir().join("offload/nvptx64-nvidia-cuda-sm_90/nvptx64-nvidia-cuda/debug/device-model.ptx");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The panic recorder of a real image (device-model's, whose kernels panic
/// in every way) claims the record through the device global, with no
/// atomic on the mapped host memory (see [`panic_recorder_problems`]).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn the_panic_recorder_has_no_atomics_on_host_memory() {
    let problems = panic_recorder_problems(&device_model_ptx());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `core`'s panics with values (index out of bounds, the four slice range
/// failures, `copy_from_slice`, `Option::expect`) in optimized device code:
/// the device link calls offload's recorders (`__offload_panic_*`) in
/// place of `core`'s functions, so that the GPU records the values and the
/// host writes `core`'s message; nothing reaches `core::fmt` (no call
/// through a function pointer, which would cost every kernel its
/// registers); a formatted `assert!` in a kernel body is recorded as its
/// format string and values (`__offload_panic_format_*`), one in a helper
/// function outside the kernel body gets the placeholder. On the host
/// fallback every message is `core`'s text, computed here. The device code
/// is compiled as the release profile compiles it (`-Copt-level=3`, no
/// debug assertions, no overflow checks) in the dev profile's build, whose
/// host dependencies the other tests share; under `--fmad`, whose device
/// target directory takes such flags (see
/// `each_kernel_once_whatever_emit_and_opt_level`). The GPU runbook runs
/// the same fixture, `--release`, on the GPU (`scripts/gpu/hardening.sh`).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn panics_with_values_are_recorded_as_values_in_optimized_device_code() {
    let f = Fixture::new("panics");
    let release = "-Copt-level=3 -Cdebug-assertions=off -Coverflow-checks=off";
    let out = f.offload_env(&["build", "--arch", "sm_90", "--fmad"], &[("OFFLOAD_DEVICE_RUSTFLAGS", release)]);
    out.assert_success();
    let path =
        f.target_dir().join("offload/nvptx64-nvidia-cuda-sm_90-fmad/nvptx64-nvidia-cuda/debug/fixture_panics.ptx");
    let ptx = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for ours in ["bounds_check", "slice_index_fail", "len_mismatch_fail", "expect_failed"] {
        assert!(ptx.contains(&format!("call.uni __offload_panic_{ours}, (")), "no call of __offload_panic_{ours}");
    }
    for core in ["18panic_bounds_check", "16slice_index_fail", "17len_mismatch_fail", "13expect_failed", "9panic_fmt"] {
        assert!(!ptx.contains(core), "core's `{core}` is still in the PTX");
    }
    assert!(!ptx.contains("prototype"), "a call through a function pointer (core::fmt) in the PTX");
    let problems = panic_recorder_problems(&ptx);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A message with values costs no registers and no stack: `bounded`'s
    // `assert!(i < n)` and `bounded_formatted`'s `assert!(i < n, "i = {} n
    // = {}", i, n)`, as ptxas allocates them.
    match ptxas_of(&f) {
        Some(ptxas) => {
            let usage = kernel_resources(&ptxas, &path);
            // `__offload_kernel_fixture_panics_<kernel>_<hash>`
            let prefix = |k: &str| format!("__offload_kernel_fixture_panics_{k}_");
            let of = |k: &str| {
                let hash = |n: &str| n.strip_prefix(&prefix(k)).is_some_and(|h| !h.contains('_'));
                usage.iter().find(|(n, _)| hash(n)).map(|u| u.1)
            };
            let (plain, formatted) = (of("bounded"), of("bounded_formatted"));
            let (helper, unmarked) = (of("bounded_helper"), of("bounded_helper_plain"));
            eprintln!(
                "ptxas -v, (registers, stack bytes): bounded {plain:?}, bounded_formatted {formatted:?}, \
                 bounded_helper {helper:?}, bounded_helper_plain {unmarked:?}"
            );
            assert!(plain.is_some() && plain == formatted, "registers and stack: {usage:?}");
            // The same in a helper marked `#[offload::record_panics]`.
            assert_eq!(helper, formatted, "registers and stack: {usage:?}");
            // Four, six and eight values cost no more than two: the chained
            // recorders (`arg_panics`) take the values in the second call.
            let two = of("values_2");
            eprintln!(
                "ptxas -v: values_2 {two:?}, values_4 {:?}, values_6 {:?}, values_8 {:?}",
                of("values_4"),
                of("values_6"),
                of("values_8")
            );
            for k in ["values_4", "values_6", "values_8"] {
                assert!(two.is_some() && of(k) == two, "{k}: registers and stack: {usage:?}");
            }
        }
        None => assert!(!require_ptxas(), "OFFLOAD_REQUIRE_PTXAS=1 but `cargo offload doctor` found no ptxas"),
    }

    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    let lines: Vec<&str> = run.stdout.lines().collect();
    // String constants of the image, as LLVM writes them in PTX (bytes):
    // the formatted assert's explicit format string, recorded with its two
    // values, and the placeholder of the helper's assert.
    let bytes = |s: &str| s.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(", ");
    for call in ["begin", "end_2", "end_6", "end_8", "end_str_6"] {
        assert!(ptx.contains(&format!("call.uni __offload_panic_format_{call}, (")), "no call of _{call}");
    }
    assert!(ptx.contains(&bytes("thread {0} of {1} asserts")), "the format string is not in the PTX");
    assert!(ptx.contains(&bytes("thread {0} asserts in a marked helper")), "the marked helper's is not either");
    let placeholder = lines.last().and_then(|l| l.strip_prefix("placeholder: ")).expect("the placeholder line");
    assert!(ptx.contains(&bytes(placeholder)), "the placeholder is not in the PTX");

    let src = std::fs::read_to_string(repo_root().join("tests/fixtures/panics/src/main.rs")).unwrap();
    let line_of = |mark: &str| src.lines().position(|l| l.ends_with(&format!("// MARK:{mark}"))).unwrap() + 1;
    let n = 1000;
    // (launch, kernel, marked line, thread, core's message)
    let expected = [
        (
            "index",
            "index",
            "index",
            777,
            format!("index out of bounds: the len is {n} but the index is {}", 777 + 1000),
        ),
        ("range start", "range", "range", 300, format!("range start index 1001 out of range for slice of length {n}")),
        ("range end", "range", "range", 301, format!("range end index 1001 out of range for slice of length {n}")),
        ("range order", "range", "range", 302, "slice index starts at 7 but ends at 3".into()),
        (
            "range inclusive",
            "range",
            "inclusive",
            303,
            format!("range end index {n} out of range for slice of length {n}"),
        ),
        (
            "copy",
            "copy",
            "copy",
            404,
            "copy_from_slice: source slice length (3) does not match destination slice length (4)".into(),
        ),
        ("expect", "expect", "expect", 505, "no element j of x".into()),
        ("formatted", "formatted", "formatted", 606, format!("thread 606 of {n} asserts")),
        ("helper", "helper", "helper", 707, "thread 707 asserts in a helper".into()),
        ("recorded", "recorded", "recorded", 808, "thread 808 asserts in a marked helper".into()),
        ("values_0", "values_0", "values_0", 900, "no values".into()),
        ("values_2", "values_2", "values_2", 902, format!("two: {} {:>5}", 902, 902)),
        ("values_4", "values_4", "values_4", 904, format!("four: {} {} {} {:#x}", 904, 904, 904, 904 * 3)),
        (
            "values_6",
            "values_6",
            "values_6",
            906,
            format!("six: {} {} {} {:#x} {:+} {:?}", 906, 906, 906, 906 * 3, 906 - 2000, 906 % 7 == 0),
        ),
        (
            "values_8",
            "values_8",
            "values_8",
            908,
            format!(
                "eight: {} {} {} {:#x} {:+} {:?} {:.3} {:?}",
                908,
                908,
                908,
                908 * 3,
                908 - 2000,
                908 % 7 == 0,
                908.0f32 / 8.0,
                (b'a' + (908 % 26) as u8) as char
            ),
        ),
        ("str_2", "str_2", "str_2", 910, format!("two: {} {:>5}", 910, "even")),
        (
            "names",
            "names",
            "names",
            911,
            format!("{} is {} ({:>6}|{:.2}|{:?}) {}", 911, "odd", "odd", "literal", "odd", "b!"),
        ),
    ];
    assert_eq!(lines.len(), 2 * expected.len() + 1, "{}", run.stdout);
    for (i, (what, kernel, mark, thread, message)) in expected.iter().enumerate() {
        let (got, next) = (lines[2 * i], lines[2 * i + 1]);
        let head = format!("{what}: kernel `fixture_panics::{kernel}` panicked at src/main.rs:{}:", line_of(mark));
        let tail = format!(" (block ({}, 0, 0), thread ({}, 0, 0)): {message}", thread / 256, thread % 256);
        assert!(got.starts_with(&head) && got.ends_with(&tail), "{got}\nexpected {head}…{tail}");
        assert_eq!(next, format!("{what}: next launch right"));
    }
}

/// The `ptxas` that `cargo offload doctor` finds for fixture `f`, if any
/// (`WITH_PTXAS`: the tests' builds skip ptxas, not this look-up).
fn ptxas_of(f: &Fixture) -> Option<std::path::PathBuf> {
    let out = offload_cmd(&f.dir, &["doctor"], &[WITH_PTXAS]);
    let line = out.stdout.lines().find(|l| l.trim_start().starts_with("ok") && l.contains(" ptxas ("))?;
    line.split_whitespace().find(|w| w.starts_with('/')).map(std::path::PathBuf::from)
}

/// `(kernel, (registers, stack frame bytes))` of each kernel of the PTX at
/// `ptx`, from `ptxas -v -arch=sm_90`.
fn kernel_resources(ptxas: &std::path::Path, ptx: &std::path::Path) -> Vec<(String, (u32, u32))> {
    let out = std::process::Command::new(ptxas).args(["-v", "-arch=sm_90", "-o", "/dev/null"]).arg(ptx).output();
    let out = out.unwrap_or_else(|e| panic!("{}: {e}", ptxas.display()));
    assert!(out.status.success(), "ptxas: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stderr);
    let (mut usage, mut kernel, mut stack) = (Vec::new(), None::<String>, 0);
    for line in text.lines() {
        let number = |after: &str| line.split(after).next()?.split_whitespace().last()?.parse::<u32>().ok();
        if let Some(k) = line.split("Function properties for ").nth(1) {
            kernel = k.starts_with("__offload_kernel_").then(|| k.trim().to_string());
        } else if let (Some(_), Some(s)) = (&kernel, number(" bytes stack frame")) {
            stack = s;
        } else if let (Some(k), Some(r)) = (&kernel, number(" registers")) {
            usage.push((k.clone(), (r, stack)));
            kernel = None;
        }
    }
    usage
}

/// Every `core::sync::atomic` operation with every ordering keeps its
/// ordering in the PTX of `tests/device-model` (its `orderings` kernels),
/// whichever device toolchain builds it (`OFFLOAD_RUSTC=/usr/bin/rustc`
/// selects Debian's rustc 1.96 / LLVM 22, whose NVPTX backend drops the
/// ordering of read-modify-writes unless the device link fences them).
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn core_atomics_keep_their_orderings_in_the_ptx() {
    let root = repo_root();
    let ptx = device_model_ptx();
    // The kernels the source declares, with the types each operation has.
    let src = std::fs::read_to_string(root.join("tests/device-model/src/orderings.rs")).unwrap();
    let declared: Vec<&str> =
        src.lines().filter_map(|l| l.trim().strip_prefix("ord_")).filter_map(|l| l.split(':').next()).collect();
    assert_eq!(declared.len(), 96, "the orderings table");
    let mut errors = Vec::new();
    for k in &declared {
        let prefix = format!(".entry __offload_kernel_device_model_ord_{k}_");
        let Some(start) = ptx.find(&prefix) else {
            errors.push(format!("ord_{k} is not in the PTX"));
            continue;
        };
        let body = &ptx[start..];
        let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
        // Types per operation: the `_all` functions of the module.
        let min = match k.split('_').take(2).collect::<Vec<_>>().join("_").as_str() {
            "fetch_add" | "fetch_sub" | "fetch_max" | "fetch_min" => 2,
            "fetch_and" | "fetch_nand" | "fetch_or" | "fetch_xor" => 3,
            _ => 4,
        };
        errors.extend(check_ordering_kernel(k, body, min));
    }
    assert!(errors.is_empty(), "{} problem(s):\n{}", errors.len(), errors.join("\n"));
}

/// A kernel that writes a plain `static` fails the device link with the
/// static's name and the fix; the fix (`#[offload::device_global]`) builds
/// and reads back what the kernels counted.
#[test]
#[ignore = "builds device code (minutes): `cargo test -p cargo-offload --test e2e -- --include-ignored`"]
fn kernels_writing_a_plain_static_fail_the_link() {
    let f = Fixture::renamed("bin-only", "static");
    f.edit("src/main.rs", |s| {
        s.replace(
            "#[kernel]\nfn axpy(",
            "static CALLS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);\n\n\
             #[kernel]\nfn count(n: u32) {\n    if (offload::global_index() as u32) < n {\n        \
             CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);\n    }\n}\n\n#[kernel]\nfn axpy(",
        )
        .replace("    let n = 1000usize;\n", "    let n = 1000usize;\n    count(offload::for_len(77), 77).unwrap();\n")
    });
    let out = f.offload(&["build", "--arch", "sm_90"]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains(&format!("kernel code writes the static(s) `{}::CALLS`", f.name)), "{}", out.stderr);
    assert!(out.stderr.contains("Declare it with `#[offload::device_global]`"), "{}", out.stderr);
    // Statics that kernels only write, which the optimizer deletes with
    // their writes: an atomic's `store` (through `AtomicU32::store`'s
    // callees in a debug build), and an assignment to a `static mut`.
    let fetch_add = "CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);";
    for (form, name) in
        [("CALLS.store(n, core::sync::atomic::Ordering::Relaxed);", "CALLS"), ("unsafe { LAST = n; }", "LAST")]
    {
        f.edit("src/main.rs", |s| {
            let s = if s.contains("static mut LAST") {
                s
            } else {
                s.replace("static CALLS", "static mut LAST: u32 = 0;\nstatic CALLS")
            };
            s.replace(fetch_add, form)
        });
        let out = f.offload(&["build", "--arch", "sm_90"]);
        assert_eq!(out.code, 4, "{form}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("kernel code writes the static(s) `{}::{name}`", f.name)),
            "{form}: {}",
            out.stderr
        );
        f.edit("src/main.rs", |s| s.replace(form, fetch_add));
    }
    f.edit("src/main.rs", |s| {
        s.replace("static mut LAST: u32 = 0;\n", "")
            .replace("static CALLS", "#[offload::device_global]\nstatic CALLS")
            .replace(fetch_add, "CALLS.with(|c| c.fetch_add(1, core::sync::atomic::Ordering::Relaxed));")
            .replace(
                "    count(offload::for_len(77), 77).unwrap();\n",
                "    count(offload::for_len(77), 77).unwrap();\n    println!(\"calls={}\", CALLS.read().unwrap().into_inner());\n",
            )
    });
    let out = f.offload(&["build", "--arch", "sm_90"]);
    out.assert_success();
    let run = f.run_exe("debug", &f.name, &[("OFFLOAD_DEVICE", "host")]);
    run.assert_success();
    assert!(run.stdout.contains("calls=77"), "{}", run.stdout);
}
