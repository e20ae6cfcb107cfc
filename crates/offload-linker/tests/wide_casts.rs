//! The inline expansion of Rust's saturating float → `i128`/`u128` casts
//! (`offload_linker::wide` plus `opt`'s `expand-ir-insts`), executed on the
//! CPU by LLVM 22's `lli` and compared with the host's `as` casts on edge
//! cases and random values.
//!
//! The device link runs the same `opt` passes with the same
//! `--expand-fp-convert-bits=64`; only the triple differs (the expansion is
//! target-independent IR). Needs `opt-22` and `lli-22` (Debian's `llvm-22`,
//! which the README's Debian route installs); without them the test says so
//! and passes.

use std::path::PathBuf;
use std::process::Command;

use offload_linker::tools::find_tool;
use offload_linker::wide::{self, SatConvert};

fn inputs_f64() -> Vec<f64> {
    let p = |e: i32| 2f64.powi(e);
    let mut v = vec![
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.999_999,
        -0.999_999,
        1.0,
        -1.0,
        1.5,
        -1.5,
        -2.5,
        p(63),
        -p(63),
        p(64),
        p(64) + 4096.0,
        -p(64) - 4096.0,
        p(126) * 1.5,
        p(127),
        -p(127),
        p(127) * (1.0 - p(-53)),
        -p(127) * (1.0 - p(-53)),
        -p(127) * (1.0 + p(-52)),
        p(128),
        -p(128),
        p(128) * (1.0 - p(-53)),
        1e38,
        -1e38,
        1e39,
        123_456_789_012_345_678_901_234_567_890.0,
        -123_456_789_012_345_678_901_234_567_890.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::EPSILON,
    ];
    // Random magnitudes 2^-20 … 2^130, both signs (SplitMix64).
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..200 {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let mant = 1.0 + (z >> 12) as f64 / (1u64 << 52) as f64;
        let e = (z % 151) as i32 - 20;
        v.push(if z & 0x800 != 0 { -mant * p(e) } else { mant * p(e) });
    }
    v
}

fn inputs_f32() -> Vec<f32> {
    let mut v: Vec<f32> = inputs_f64().iter().map(|&x| x as f32).collect();
    v.extend([
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        2f32.powi(127),
        -2f32.powi(127),
        2f32.powi(126) * 1.75,
    ]);
    v
}

/// A module that prints `helper(x)` for each `x` as 32 hex digits.
fn module(conv: &SatConvert, fty: &str, xs: &[u64]) -> String {
    let n = xs.len();
    let bits = if fty == "float" { "i32" } else { "i64" };
    let values: Vec<String> = xs.iter().map(|x| format!("{bits} {x}")).collect();
    format!(
        "target triple = \"x86_64-unknown-linux-gnu\"\n\
         @xs = global [{n} x {bits}] [{values}]\n\
         @fmt = private constant [14 x i8] c\"%016lx%016lx\\0A\\00\"\n\
         declare i32 @printf(ptr, ...)\n\
         {def}\n\
         define i32 @main() {{\n\
         entry:\n  br label %loop\n\
         loop:\n  %i = phi i64 [0, %entry], [%next, %loop]\n  \
           %p = getelementptr [{n} x {bits}], ptr @xs, i64 0, i64 %i\n  \
           %b = load {bits}, ptr %p\n  %x = bitcast {bits} %b to {fty}\n  \
           %r = call i128 @{helper}({fty} %x)\n  \
           %hi.w = lshr i128 %r, 64\n  %hi = trunc i128 %hi.w to i64\n  %lo = trunc i128 %r to i64\n  \
           call i32 (ptr, ...) @printf(ptr @fmt, i64 %hi, i64 %lo)\n  \
           %next = add i64 %i, 1\n  %done = icmp eq i64 %next, {n}\n  br i1 %done, label %exit, label %loop\n\
         exit:\n  ret i32 0\n}}\n",
        values = values.join(", "),
        def = conv.definition(),
        helper = conv.helper(),
    )
}

/// Runs `module` through opt (the device link's expansion) and lli.
fn run(opt: &PathBuf, lli: &PathBuf, name: &str, text: &str) -> Vec<u128> {
    let dir = std::env::temp_dir().join(format!("offload-wide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.ll"));
    let expanded = dir.join(format!("{name}.opt.ll"));
    std::fs::write(&src, text).unwrap();
    let out = Command::new(opt)
        .arg(&src)
        .arg("-S")
        .arg("--expand-div-rem-bits=64")
        .arg("--expand-fp-convert-bits=64")
        .arg(format!("--passes=default<O2>,{}", offload_linker::LlvmTools::expand_passes_for(22)))
        .arg("-o")
        .arg(&expanded)
        .output()
        .unwrap();
    assert!(out.status.success(), "opt: {}", String::from_utf8_lossy(&out.stderr));
    let ir = std::fs::read_to_string(&expanded).unwrap();
    // Expanded inline: no conversion to i128 and no saturating intrinsic is left.
    let left: Vec<&str> = ir
        .lines()
        .filter(|l| l.starts_with("  ") && (l.contains("fptosi") || l.contains("fptoui")) && l.contains("i128"))
        .collect();
    assert!(left.is_empty(), "not expanded: {left:?}");
    let out = Command::new(lli).arg(&expanded).output().unwrap();
    assert!(out.status.success(), "lli: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| u128::from_str_radix(l, 16).unwrap()).collect()
}

#[test]
fn saturating_casts_match_the_host() {
    let (Ok(opt), Ok(lli)) =
        (find_tool("opt", "OFFLOAD_TEST_OPT22", 22, None, &[]), find_tool("lli", "OFFLOAD_TEST_LLI22", 22, None, &[]))
    else {
        eprintln!("note: opt-22 / lli-22 not found (apt-get install llvm-22); expansion not executed");
        return;
    };
    let d = inputs_f64();
    let f = inputs_f32();
    let bits64: Vec<u64> = d.iter().map(|x| x.to_bits()).collect();
    let bits32: Vec<u64> = f.iter().map(|x| u64::from(x.to_bits())).collect();
    for (name, fty, xs, want) in [
        ("fptosi_sat_i128_f64", "double", &bits64, d.iter().map(|&x| x as i128 as u128).collect::<Vec<_>>()),
        ("fptoui_sat_i128_f64", "double", &bits64, d.iter().map(|&x| x as u128).collect()),
        ("fptosi_sat_i128_f32", "float", &bits32, f.iter().map(|&x| x as i128 as u128).collect()),
        ("fptoui_sat_i128_f32", "float", &bits32, f.iter().map(|&x| x as u128).collect()),
    ] {
        let conv = SatConvert::parse(&format!("llvm.{}", name.replace('_', "."))).unwrap();
        let got = run(&opt, &lli, name, &module(&conv, fty, xs));
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let x = if fty == "double" { f64::from_bits(xs[i]) } else { f32::from_bits(xs[i] as u32) as f64 };
            assert_eq!(g, w, "{name}({x:e}): got {g:#x}, want {w:#x}");
        }
    }
    // The rewrite finds and replaces what rustc emits.
    let (text, convs) = wide::rewrite("  %a = call i128 @llvm.fptoui.sat.i128.f64(double %x)\n");
    assert_eq!(convs.len(), 1);
    assert!(text.contains("@__offload_fptoui_sat_i128_f64(double %x)"));
}
