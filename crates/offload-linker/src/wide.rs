//! Saturating float → wide integer conversions, expanded inline.
//!
//! Rust's `x as i128` / `x as u128` (from `f32`/`f64`) saturates: NaN gives
//! 0, values beyond the integer's range give its minimum or maximum, others
//! are truncated toward zero (The Rust Reference, "Numeric cast"). rustc
//! emits them as `llvm.fptosi.sat.i128.f64` / `llvm.fptoui.sat.i128.f32`.
//! The GPU backends cannot call `compiler_builtins` (`__fixdfti`, …), so
//! `opt`'s `expand-ir-insts` (`--expand-fp-convert-bits=64`) expands
//! conversions wider than 64 bits inline; LLVM 22's version expands plain
//! `fptosi`/`fptoui` but not the saturating intrinsics, which then reach
//! `llc` and abort it ("LLVM ERROR: unsupported library call operation").
//!
//! [`rewrite`] replaces each saturating intrinsic wider than 64 bits with a
//! small always-inlined function that spells out the saturation with
//! compares and selects around a plain, in-range `fptosi`/`fptoui`, which
//! the expansion handles on every LLVM version; LLVM 23 (which expands the
//! intrinsics itself) gets the same code, so both mean the same.

/// The integer width above which conversions are expanded inline (the
/// device link's `--expand-fp-convert-bits`).
pub const EXPAND_BITS: u32 = 64;

/// One saturating conversion intrinsic, `llvm.fpto{s,u}i.sat.i<bits>.<float>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatConvert {
    pub signed: bool,
    pub bits: u32,
    /// The LLVM name suffix of the source type: `f16`, `bf16`, `f32`, `f64`.
    pub float: String,
}

impl SatConvert {
    /// Parses an intrinsic name without `@` (scalar forms only).
    pub fn parse(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("llvm.fpto")?;
        let (signed, rest) = match rest.strip_prefix("si.sat.i") {
            Some(r) => (true, r),
            None => (false, rest.strip_prefix("ui.sat.i")?),
        };
        let (bits, float) = rest.split_once('.')?;
        let bits = bits.parse().ok()?;
        matches!(float, "f16" | "bf16" | "f32" | "f64").then(|| SatConvert { signed, bits, float: float.into() })
    }

    fn intrinsic(&self) -> String {
        format!("llvm.fpto{}i.sat.i{}.{}", if self.signed { 's' } else { 'u' }, self.bits, self.float)
    }

    /// The replacement's name.
    pub fn helper(&self) -> String {
        format!("__offload_fpto{}i_sat_i{}_{}", if self.signed { 's' } else { 'u' }, self.bits, self.float)
    }

    /// The LLVM IR type of the source and its largest finite binary exponent.
    fn float_type(&self) -> (&'static str, u32) {
        match self.float.as_str() {
            "f16" => ("half", 15),
            "bf16" => ("bfloat", 127),
            "f32" => ("float", 127),
            _ => ("double", 1023),
        }
    }

    /// `2^k` as an LLVM hexadecimal double constant, or infinity when the
    /// source type has no such finite value (then no finite value reaches it).
    fn pow2(&self, k: u32, negative: bool) -> String {
        let (_, max_exp) = self.float_type();
        let bits: u64 = if k > max_exp { 0x7ff0_0000_0000_0000 } else { u64::from(1023 + k) << 52 };
        format!("0x{:016X}", bits | if negative { 1 << 63 } else { 0 })
    }

    /// The definition of [`helper`](Self::helper): NaN → 0; `x ≥ 2^(n-1)`
    /// (signed) or `x ≥ 2^n` (unsigned) → the maximum; `x < -2^(n-1)`
    /// (signed) or `x < 0` (unsigned) → the minimum (0 for unsigned; a
    /// negative fraction truncates to 0 as well); else the conversion of
    /// `x`, in range, so never poison.
    pub fn definition(&self) -> String {
        let (fty, _) = self.float_type();
        let n = self.bits;
        let ity = format!("i{n}");
        let (hi, lo, max, min, conv) = if self.signed {
            let max = i128::MAX >> (128 - n);
            (self.pow2(n - 1, false), self.pow2(n - 1, true), max.to_string(), (-max - 1).to_string(), "fptosi")
        } else {
            (self.pow2(n, false), "0x0000000000000000".to_string(), "-1".to_string(), "0".to_string(), "fptoui")
        };
        format!(
            "define internal {ity} @{name}({fty} %x) alwaysinline nounwind {{\n  \
               %nan = fcmp uno {fty} %x, 0x0000000000000000\n  \
               %hi = fcmp oge {fty} %x, {hi}\n  \
               %lo = fcmp olt {fty} %x, {lo}\n  \
               %out.0 = or i1 %hi, %lo\n  \
               %out = or i1 %out.0, %nan\n  \
               %in = select i1 %out, {fty} 0x0000000000000000, {fty} %x\n  \
               %t = {conv} {fty} %in to {ity}\n  \
               %r.0 = select i1 %hi, {ity} {max}, {ity} %t\n  \
               %r.1 = select i1 %lo, {ity} {min}, {ity} %r.0\n  \
               %r = select i1 %nan, {ity} 0, {ity} %r.1\n  \
               ret {ity} %r\n}}\n",
            name = self.helper()
        )
    }
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_')
}

/// The saturating conversions wider than [`EXPAND_BITS`] (and at most 128
/// bits, Rust's widest integers) that `ir` references, each once.
pub fn find(ir: &str) -> Vec<SatConvert> {
    let mut found: Vec<SatConvert> = Vec::new();
    let b = ir.as_bytes();
    for (i, _) in ir.match_indices("@llvm.fpto") {
        let mut j = i + 1;
        while j < b.len() && is_name_char(b[j]) {
            j += 1;
        }
        if let Some(c) = SatConvert::parse(&ir[i + 1..j]) {
            if c.bits > EXPAND_BITS && c.bits <= 128 && !found.contains(&c) {
                found.push(c);
            }
        }
    }
    found
}

/// Replaces the wide saturating conversions of `ir` (module text) with
/// calls of their inline definitions (see the module docs). Returns the
/// new text and what was replaced.
pub fn rewrite(ir: &str) -> (String, Vec<SatConvert>) {
    let convs = find(ir);
    if convs.is_empty() {
        return (ir.to_string(), convs);
    }
    let mut out = String::with_capacity(ir.len() + 1024 * convs.len());
    for line in ir.lines() {
        let declares =
            line.starts_with("declare ") && convs.iter().any(|c| line.contains(&format!("@{}(", c.intrinsic())));
        if declares {
            continue;
        }
        let mut l = line.to_string();
        for c in &convs {
            // `(` ends the name in both calls and declarations, so a longer
            // name with this one as prefix is never touched.
            l = l.replace(&format!("@{}(", c.intrinsic()), &format!("@{}(", c.helper()));
        }
        out.push_str(&l);
        out.push('\n');
    }
    for c in &convs {
        out.push('\n');
        out.push_str(&c.definition());
    }
    (out, convs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = "define i128 @k(double %x, float %y) {\n  \
        %a = call i128 @llvm.fptosi.sat.i128.f64(double %x)\n  \
        %b = tail call i128 @llvm.fptoui.sat.i128.f32(float %y)\n  \
        %c = call i64 @llvm.fptosi.sat.i64.f64(double %x)\n  \
        ret i128 %a\n}\n\n\
        declare i128 @llvm.fptosi.sat.i128.f64(double) #1\n\
        declare i128 @llvm.fptoui.sat.i128.f32(float) #1\n\
        declare i64 @llvm.fptosi.sat.i64.f64(double) #1\n";

    #[test]
    fn parses_intrinsic_names() {
        assert_eq!(
            SatConvert::parse("llvm.fptosi.sat.i128.f64"),
            Some(SatConvert { signed: true, bits: 128, float: "f64".into() })
        );
        assert_eq!(
            SatConvert::parse("llvm.fptoui.sat.i128.f32"),
            Some(SatConvert { signed: false, bits: 128, float: "f32".into() })
        );
        assert_eq!(SatConvert::parse("llvm.fptosi.sat.v2i128.v2f64"), None);
        assert_eq!(SatConvert::parse("llvm.fptosi.i128.f64"), None);
        assert_eq!(SatConvert::parse("llvm.fptoui.sat.i128.f128"), None);
    }

    #[test]
    fn wide_conversions_are_replaced_narrow_ones_kept() {
        let (t, convs) = rewrite(IR);
        assert_eq!(convs.len(), 2);
        assert!(t.contains("%a = call i128 @__offload_fptosi_sat_i128_f64(double %x)"), "{t}");
        assert!(t.contains("%b = tail call i128 @__offload_fptoui_sat_i128_f32(float %y)"), "{t}");
        assert!(t.contains("call i64 @llvm.fptosi.sat.i64.f64(double %x)"), "{t}");
        assert!(t.contains("declare i64 @llvm.fptosi.sat.i64.f64(double) #1"), "{t}");
        assert!(!t.contains("llvm.fptosi.sat.i128") && !t.contains("llvm.fptoui.sat.i128"), "{t}");
        assert!(
            t.contains("define internal i128 @__offload_fptosi_sat_i128_f64(double %x) alwaysinline nounwind {"),
            "{t}"
        );
        assert_eq!(rewrite("define void @f() {\n  ret void\n}\n").1, []);
    }

    #[test]
    fn bounds_and_limits() {
        let s = SatConvert::parse("llvm.fptosi.sat.i128.f64").unwrap().definition();
        // 2^127 = 0x47E0000000000000; -2^127; i128::MAX and MIN.
        assert!(s.contains("fcmp oge double %x, 0x47E0000000000000"), "{s}");
        assert!(s.contains("fcmp olt double %x, 0xC7E0000000000000"), "{s}");
        assert!(s.contains(&format!("i128 {}, i128 %t", i128::MAX)), "{s}");
        assert!(s.contains(&format!("i128 {}, i128 %r.0", i128::MIN)), "{s}");
        let u = SatConvert::parse("llvm.fptoui.sat.i128.f64").unwrap().definition();
        // 2^128 = 0x47F0000000000000; below 0 → 0; u128::MAX is -1 in IR.
        assert!(u.contains("fcmp oge double %x, 0x47F0000000000000"), "{u}");
        assert!(u.contains("fcmp olt double %x, 0x0000000000000000"), "{u}");
        assert!(u.contains("select i1 %hi, i128 -1, i128 %t"), "{u}");
        // f32 has no finite 2^128: only +inf saturates u128 from above.
        let f = SatConvert::parse("llvm.fptoui.sat.i128.f32").unwrap().definition();
        assert!(f.contains("fcmp oge float %x, 0x7FF0000000000000"), "{f}");
        let f = SatConvert::parse("llvm.fptosi.sat.i128.f32").unwrap().definition();
        assert!(f.contains("fcmp oge float %x, 0x47E0000000000000"), "{f}");
    }
}
