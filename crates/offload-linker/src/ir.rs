//! Textual LLVM IR rewrites the device link needs before optimization
//! (on the output of `llvm-link -S`):
//!
//! 1. **Shared memory.** Rust cannot place a static in an address space, so
//!    `offload::shared_array!` declares an ordinary static in the section
//!    [`SHARED_SECTION`]; each such global becomes an `addrspace(3)` (PTX
//!    `.shared`) global without initializer (`undef`: PTX cannot initialize
//!    shared memory), and every use of it becomes
//!    `addrspacecast (ptr addrspace(3) @g to ptr)`, a generic pointer to it
//!    (LLVM's `infer-address-spaces` later turns the accesses into
//!    `ld.shared`/`st.shared`/`atom.shared`).
//! 2. **Dynamic shared memory.** The declaration of [`DYNAMIC_SHARED`]
//!    becomes `external addrspace(3) global [0 x i8], align 16`, which llc
//!    emits as `.extern .shared .align 16 .b8 __offload_dynamic_shared[];`,
//!    CUDA's `extern __shared__` array.
//! 3. **Math without libdevice.** When libdevice is not linked, references
//!    to libdevice functions (`@__nv_X`) are renamed to `offload`'s pure-Rust
//!    definitions `@__offload_libm_X`.

/// The section `offload::shared_array!` puts its statics in.
pub const SHARED_SECTION: &str = ".offload.shared";
/// The dynamic shared memory symbol declared by `offload`.
pub const DYNAMIC_SHARED: &str = "__offload_dynamic_shared";

/// What [`rewrite`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The IR text.
    pub text: String,
    /// Globals moved to shared memory.
    pub shared: Vec<String>,
    /// Whether the dynamic shared memory symbol was found.
    pub dynamic: bool,
    /// Whether the module references libdevice functions (`@__nv_*`).
    pub uses_libdevice: bool,
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_')
}

/// The global name (with `@`, quotes kept) starting at `s[i] == b'@'`.
fn name_at(s: &str, i: usize) -> &str {
    let b = s.as_bytes();
    let mut j = i + 1;
    if j < b.len() && b[j] == b'"' {
        j += 1;
        while j < b.len() && b[j] != b'"' {
            j += 1;
        }
        return &s[i..(j + 1).min(b.len())];
    }
    while j < b.len() && is_name_char(b[j]) {
        j += 1;
    }
    &s[i..j]
}

/// Replaces every use of the globals in `names` (outside their definition
/// lines, given by index) with a generic-address cast of the shared global.
fn replace_uses(line: &str, names: &[String]) -> String {
    if !line.contains('@') {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 64);
    let mut i = 0;
    let b = line.as_bytes();
    let mut last = 0;
    while i < b.len() {
        if b[i] == b'@' {
            let n = name_at(line, i);
            if names.iter().any(|x| x == n) {
                out.push_str(&line[last..i]);
                out.push_str("addrspacecast (ptr addrspace(3) ");
                out.push_str(n);
                out.push_str(" to ptr)");
                i += n.len();
                last = i;
                continue;
            }
            i += n.len().max(1);
            continue;
        }
        i += 1;
    }
    out.push_str(&line[last..]);
    out
}

/// Length of the LLVM type at the start of `s` (`i32`, `[4 x float]`,
/// `<{ [8 x i8], i32 }>`, `{ ptr, i64 }`).
fn type_len(s: &str) -> usize {
    let b = s.as_bytes();
    match b.first() {
        Some(b'[') | Some(b'<') | Some(b'{') => {
            let mut depth = 0i32;
            for (i, &c) in b.iter().enumerate() {
                match c {
                    b'[' | b'<' | b'{' => depth += 1,
                    b']' | b'>' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
            }
            s.len()
        }
        _ => s.find(' ').unwrap_or(s.len()),
    }
}

/// Rewrites one definition line of a shared static (rustc's optimizer may
/// have split the array into scalars, `@g.0 = internal global i32 0, …`):
/// `@g = <linkage…> global <ty> <init>, section "…", align N…`
/// → `@g = internal addrspace(3) global <ty> undef, align N…`. The
/// initializer is dropped: shared memory starts unspecified, which is what
/// `offload` promises.
fn shared_definition(line: &str) -> Result<String, String> {
    let (name, rest) = line.split_once(" = ").ok_or_else(|| format!("unexpected shared static: {line}"))?;
    let gpos = rest.find("global ").ok_or_else(|| format!("shared static is not a `global`: {line}"))?;
    let after = &rest[gpos + "global ".len()..];
    let sec = format!(", section \"{SHARED_SECTION}\"");
    let spos = after.find(&sec).ok_or_else(|| format!("no section in {line}"))?;
    let ty = &after[..type_len(after)];
    let tail = &after[spos + sec.len()..];
    Ok(format!("{name} = internal addrspace(3) global {ty} undef{tail}"))
}

/// Applies the rewrites (see the module docs). `link_libdevice`: whether
/// libdevice will be linked (else `@__nv_*` is renamed).
pub fn rewrite(ir: &str, link_libdevice: bool) -> Result<Rewritten, String> {
    let marker = format!("section \"{SHARED_SECTION}\"");
    let dyn_name = format!("@{DYNAMIC_SHARED}");
    let mut names: Vec<String> = Vec::new();
    let mut dynamic = false;
    for line in ir.lines() {
        if line.starts_with('@') {
            let n = name_at(line, 0);
            if line.contains(&marker) {
                names.push(n.to_string());
            } else if n == dyn_name && line.contains(" external ") {
                dynamic = true;
            }
        }
    }
    let uses_libdevice = ir.contains("@__nv_");
    let rename = uses_libdevice && !link_libdevice;
    let mut cast_names = names.clone();
    if dynamic {
        cast_names.push(dyn_name.clone());
    }
    // Definitions of the libm fallbacks, to drop now-duplicate declarations.
    let mut defined: Vec<&str> = Vec::new();
    if rename {
        for line in ir.lines() {
            if line.starts_with("define ") {
                if let Some(p) = line.find("@__offload_libm_") {
                    defined.push(name_at(line, p));
                }
            }
        }
    }
    let mut out = String::with_capacity(ir.len() + 1024);
    for line in ir.lines() {
        let mut l: String = if line.starts_with('@') && line.contains(&marker) {
            shared_definition(line)?
        } else if dynamic && line.starts_with(&dyn_name) && name_at(line, 0) == dyn_name {
            format!("{dyn_name} = external addrspace(3) global [0 x i8], align 16")
        } else if cast_names.is_empty() {
            line.to_string()
        } else {
            replace_uses(line, &cast_names)
        };
        if rename && l.contains("@__nv_") {
            l = l.replace("@__nv_", "@__offload_libm_");
            if l.starts_with("declare ") {
                if let Some(p) = l.find("@__offload_libm_") {
                    let n = name_at(&l, p);
                    if defined.contains(&n) {
                        continue;
                    }
                }
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    Ok(Rewritten { text: out, shared: names, dynamic, uses_libdevice })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"@_ZN1k6SHARED17h1E = internal global <{ [1024 x i8] }> zeroinitializer, section ".offload.shared", align 4
@__offload_dynamic_shared = external global [0 x i8]
@other = global i32 0

define void @k(i64 %i) {
  %p = getelementptr inbounds i32, ptr @_ZN1k6SHARED17h1E, i64 %i
  store i32 1, ptr %p, align 4
  %q = getelementptr inbounds i8, ptr @__offload_dynamic_shared, i64 %i
  %v = load i32, ptr @other, align 4
  %s = call float @__nv_sinf(float 1.0)
  ret void
}

declare float @__nv_sinf(float)

define float @__offload_libm_sinf(float %x) {
  ret float %x
}
"#;

    #[test]
    fn shared_statics_move_to_addrspace_3() {
        let r = rewrite(IR, true).unwrap();
        assert_eq!(r.shared, ["@_ZN1k6SHARED17h1E"]);
        assert!(r.dynamic);
        assert!(r.uses_libdevice);
        let t = &r.text;
        assert!(
            t.contains("@_ZN1k6SHARED17h1E = internal addrspace(3) global <{ [1024 x i8] }> undef, align 4\n"),
            "{t}"
        );
        assert!(t.contains("ptr addrspacecast (ptr addrspace(3) @_ZN1k6SHARED17h1E to ptr), i64 %i"), "{t}");
        assert!(t.contains("@__offload_dynamic_shared = external addrspace(3) global [0 x i8], align 16\n"), "{t}");
        assert!(t.contains("ptr addrspacecast (ptr addrspace(3) @__offload_dynamic_shared to ptr), i64 %i"), "{t}");
        assert!(t.contains("load i32, ptr @other"), "{t}");
        // libdevice linked: names kept
        assert!(t.contains("call float @__nv_sinf"), "{t}");
    }

    #[test]
    fn without_libdevice_math_binds_to_libm() {
        let r = rewrite(IR, false).unwrap();
        let t = &r.text;
        assert!(t.contains("call float @__offload_libm_sinf(float 1.0)"), "{t}");
        assert!(!t.contains("declare float @__offload_libm_sinf"), "{t}");
        assert!(!t.contains("@__nv_"), "{t}");
    }

    #[test]
    fn split_and_initialized_statics() {
        let ir = "@g.0 = internal unnamed_addr global i32 7, section \".offload.shared\", align 4\n@h = internal global { float, [2 x i32] } { float 1.0, [2 x i32] [i32 1, i32 2] }, section \".offload.shared\", align 8\n";
        let r = rewrite(ir, true).unwrap();
        assert!(r.text.contains("@g.0 = internal addrspace(3) global i32 undef, align 4\n"), "{}", r.text);
        assert!(
            r.text.contains("@h = internal addrspace(3) global { float, [2 x i32] } undef, align 8\n"),
            "{}",
            r.text
        );
    }

    #[test]
    fn quoted_names() {
        let ir = "@\"a b\" = internal global [4 x i8] zeroinitializer, section \".offload.shared\", align 4\n  store i8 0, ptr @\"a b\"\n";
        let r = rewrite(ir, true).unwrap();
        assert!(r.text.contains("ptr addrspacecast (ptr addrspace(3) @\"a b\" to ptr)"), "{}", r.text);
    }
}
