//! LLVM intrinsics are called, never used as values.
//!
//! The device code declares LLVM intrinsics as extern functions
//! (`#[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]`), and `core::arch::nvptx`
//! does the same. An intrinsic has no address: turning one into a fn
//! pointer (`shfl(nv::shfl_bfly, …)`) made rustc 1.101 abort with an ICE
//! ("`LlvmIntrinsic(…)` being reified", `rustc_monomorphize` collector) on
//! every kernel that used `offload::warp`. This test reads every source file
//! of the crate and fails on any use of an intrinsic other than as the
//! callee of a call, so the rule holds without a nightly at hand.

// Host-only: `cargo offload test` also builds this target for the GPU,
// where its dependencies (std) do not exist.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "amdgpu")))]
mod host {
    use std::path::{Path, PathBuf};

    use syn::visit::Visit;

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Extern functions with `#[link_name = "llvm.…"]`: (module that holds
    /// the extern block, if any, function name).
    #[derive(Default)]
    struct Declared {
        module: Vec<String>,
        found: Vec<(Option<String>, String)>,
    }

    impl<'a> Visit<'a> for Declared {
        fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
        fn visit_foreign_item_fn(&mut self, f: &'a syn::ForeignItemFn) {
            let llvm = f.attrs.iter().any(|a| {
                a.path().is_ident("link_name")
                    && matches!(&a.meta, syn::Meta::NameValue(nv) if matches!(&nv.value,
                        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) if s.value().starts_with("llvm.")))
            });
            if llvm {
                self.found.push((self.module.last().cloned(), f.sig.ident.to_string()));
            }
        }
    }

    /// Paths naming an intrinsic anywhere but in callee position: `m::name`
    /// for an intrinsic declared in module `m`, a bare `name` in the file that
    /// declares it, and anything from `core::arch::nvptx` (LLVM intrinsics too).
    struct Uses<'n> {
        declared: &'n [(Option<String>, String)],
        bad: Vec<String>,
    }

    impl Uses<'_> {
        fn is_intrinsic(&self, p: &syn::Path) -> bool {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            if segs.iter().any(|s| s == "nvptx") {
                return true;
            }
            match segs.as_slice() {
                [name] => self.declared.iter().any(|(_, n)| n == name),
                [.., module, name] => self.declared.iter().any(|(m, n)| n == name && m.as_ref() == Some(module)),
                [] => false,
            }
        }
    }

    impl<'a> Visit<'a> for Uses<'_> {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            // The callee is a call, whatever it names; its arguments are values.
            if !matches!(&*c.func, syn::Expr::Path(_)) {
                self.visit_expr(&c.func);
            }
            for a in &c.args {
                self.visit_expr(a);
            }
        }
        fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
            if self.is_intrinsic(&p.path) {
                let text: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                self.bad.push(text.join("::"));
            }
        }
    }

    #[test]
    fn intrinsics_are_only_called() {
        let mut files = Vec::new();
        sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        files.sort();
        let parsed: Vec<(PathBuf, syn::File)> = files
            .into_iter()
            .map(|f| {
                let text = std::fs::read_to_string(&f).unwrap();
                let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                (f, ast)
            })
            .collect();
        let mut all = Vec::new();
        let mut bad = Vec::new();
        for (file, ast) in &parsed {
            let mut declared = Declared::default();
            declared.visit_file(ast);
            all.extend(declared.found.iter().map(|(_, n)| n.clone()));
            let mut uses = Uses { declared: &declared.found, bad: Vec::new() };
            uses.visit_file(ast);
            bad.extend(uses.bad.into_iter().map(|b| format!("{}: `{b}` used as a value", file.display())));
        }
        // warp (shuffles, votes), math (sqrt, fma, …), shared (dynamic size).
        for name in ["shfl_bfly", "vote_ballot", "sqrtf", "dynamic_smem_size"] {
            assert!(all.iter().any(|d| d == name), "{name} not among {all:?}");
        }
        assert!(bad.is_empty(), "LLVM intrinsics must be called directly, not reified:\n{}", bad.join("\n"));
    }

    /// The check itself finds a reified intrinsic (the pattern that broke).
    #[test]
    fn the_check_sees_a_reified_intrinsic() {
        let ast: syn::File = syn::parse_str(
            "mod nv { extern \"C\" { #[link_name = \"llvm.nvvm.shfl.sync.bfly.i32\"] pub fn shfl_bfly(m: u32, v: u32, b: u32, c: u32) -> u32; } }
             fn shfl(f: unsafe extern \"C\" fn(u32, u32, u32, u32) -> u32) -> u32 { unsafe { f(0, 0, 0, 0) } }
             fn ok() -> u32 { unsafe { nv::shfl_bfly(0, 1, 2, 3) } }
             fn bad() -> u32 { shfl(nv::shfl_bfly) }",
        )
        .unwrap();
        let mut declared = Declared::default();
        declared.visit_file(&ast);
        let mut uses = Uses { declared: &declared.found, bad: Vec::new() };
        uses.visit_file(&ast);
        assert_eq!(uses.bad, ["nv::shfl_bfly"]);
    }
}
