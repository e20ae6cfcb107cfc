//! The host side's grid-stride loops in lockstep: in a kernel body whose
//! barriers are awaits (`barriers`), a grid-stride loop whose iterations
//! can neither leave the loop nor wait becomes an await of
//! `__private::lockstep(iter, |pat| body)`, which the host fallback runs
//! one iteration of every thread of the block at a time
//! (`offload::hostsim::lockstep`). Any other grid-stride loop pauses at a
//! step every few iterations (`barriers::stepped`).
//!
//! An iteration can leave the loop by `break` (or a jump to an outer
//! label), `return` or `?`; it could wait where the macro cannot see it in
//! a function it calls: a call of a closure or of a function outside
//! `core`/`std`/`alloc`, the primitive types' associated functions,
//! constructors (a capitalized name) and offload's geometry functions
//! keeps the loop stepped. (A method that waits is still run correctly:
//! the host fallback then stops the rounds.) Its `continue` becomes a
//! `return` from the closure.

use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprForLoop, Label};

/// Offload's functions that read the thread's place in the launch, which a
/// loop may call (they cannot wait).
const GEOMETRY: &[&str] = &[
    "thread_idx",
    "block_idx",
    "block_dim",
    "grid_dim",
    "global_index",
    "global_size",
    "global_thread_idx",
    "global_dim",
    "lane_id",
    "warp_id",
];

/// The primitive types, whose associated functions a loop may call.
const PRIMITIVES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool",
    "char",
];

/// Macros whose arguments are expressions evaluated where they stand.
const MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "unreachable",
    "print",
    "println",
    "eprint",
    "eprintln",
    "matches",
];

/// Whether grid-stride loop `f` (its body already rewritten, with no await
/// in it) can run in lockstep (see the module docs). `uninit`: the names
/// that the kernel's body declares without a value (`let x;`).
pub(super) fn fits(f: &ExprForLoop, uninit: &[String]) -> bool {
    if !f.attrs.is_empty() {
        // `#[cfg(…)]`, `#[allow(…)]` on the loop: kept as written.
        return false;
    }
    let mut inner = Declared::default();
    inner.visit_pat(&f.pat);
    inner.visit_block(&f.body);
    let mut v = Fits {
        ok: true,
        depth: 0,
        labels: Vec::new(),
        own: f.label.as_ref(),
        in_closure: 0,
        inner: inner.names,
        uninit,
    };
    v.visit_block(&f.body);
    v.ok
}

/// The names that `let` statements and closure parameters declare, anywhere
/// in what is visited (`names`); with `uninit`, only those of `let`s
/// without a value.
#[derive(Default)]
pub(super) struct Declared {
    pub(super) names: Vec<String>,
    pub(super) uninit_only: bool,
}

impl<'ast> Visit<'ast> for Declared {
    fn visit_local(&mut self, l: &'ast syn::Local) {
        if !self.uninit_only || l.init.is_none() {
            self.visit_pat(&l.pat);
        }
        if let Some(init) = &l.init {
            self.visit_local_init(init);
        }
    }

    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.names.push(p.ident.to_string());
        visit::visit_pat_ident(self, p);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        if !self.uninit_only {
            c.inputs.iter().for_each(|p| self.visit_pat(p));
        }
        self.visit_expr(&c.body);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// `f` as an await of its lockstep loop.
pub(super) fn lockstepped(mut f: ExprForLoop) -> TokenStream {
    let mut c = Continues { depth: 0, own: f.label.clone(), inner: Vec::new() };
    c.visit_block_mut(&mut f.body);
    let (pat, expr, body) = (&f.pat, &f.expr, &f.body);
    let param = match &**pat {
        syn::Pat::Or(_) => quote_spanned! {f.for_token.span=> (#pat)},
        _ => quote_spanned! {f.for_token.span=> #pat},
    };
    quote_spanned! {f.for_token.span=>
        { ::offload::__private::lockstep(#expr, |#param| #body).await }
    }
}

/// The checking visitor: `depth` counts the loops around the expression
/// within the body, `labels` the labels defined within it, `own` the
/// loop's own label; calls are checked inside closures too, jumps not.
struct Fits<'a> {
    ok: bool,
    depth: usize,
    labels: Vec<String>,
    own: Option<&'a Label>,
    in_closure: usize,
    /// Names declared in the loop (its pattern, `let`s, closure parameters).
    inner: Vec<String>,
    uninit: &'a [String],
}

impl Fits<'_> {
    fn defined(&self, l: &syn::Lifetime) -> bool {
        self.labels.iter().any(|d| l.ident == d)
    }

    fn is_own(&self, l: &syn::Lifetime) -> bool {
        self.own.is_some_and(|o| o.name.ident == l.ident)
    }

    fn looped(&mut self, label: Option<&Label>, walk: impl FnOnce(&mut Self)) {
        if let Some(l) = label {
            self.labels.push(l.name.ident.to_string());
        }
        self.depth += 1;
        walk(self);
        self.depth -= 1;
        if label.is_some() {
            self.labels.pop();
        }
    }
}

/// Whether a call of `path` cannot wait (see the module docs).
fn callable(path: &syn::Path) -> bool {
    let segs = &path.segments;
    let (Some(first), Some(last)) = (segs.first(), segs.last()) else { return false };
    let first = first.ident.to_string();
    let last = last.ident.to_string();
    ["core", "std", "alloc", "offload"].contains(&first.as_str())
        || (segs.len() > 1 && PRIMITIVES.contains(&first.as_str()))
        || last.starts_with(|c: char| c.is_ascii_uppercase())
        || (segs.len() == 1 && GEOMETRY.contains(&last.as_str()))
}

/// Whether the tokens of a macro's arguments hold nothing that leaves the
/// loop or waits: no `return`, `break`, `continue`, `?`, `await`, and
/// calls only of what [`callable`] allows, by a one-segment name.
fn tokens_fit(tokens: TokenStream) -> bool {
    // The token before `prev`: a `.` makes `prev (…)` a method call.
    let (mut prev, mut before): (Option<TokenTree>, Option<TokenTree>) = (None, None);
    for tt in tokens {
        match &tt {
            TokenTree::Ident(i) if ["return", "break", "continue", "await"].contains(&i.to_string().as_str()) => {
                return false
            }
            TokenTree::Punct(p) if p.as_char() == '?' => return false,
            TokenTree::Group(g) => {
                if g.delimiter() == proc_macro2::Delimiter::Parenthesis {
                    let method = matches!(&before, Some(TokenTree::Punct(p)) if p.as_char() == '.');
                    if let (Some(TokenTree::Ident(i)), false) = (&prev, method) {
                        let path: syn::Path = i.clone().into();
                        if !callable(&path) && !is_keyword(&i.to_string()) {
                            return false;
                        }
                    }
                }
                if !tokens_fit(g.stream()) {
                    return false;
                }
            }
            _ => {}
        }
        before = prev.replace(tt);
    }
    true
}

/// Keywords a parenthesized group may follow (`if (a)`, `in (x)`, …).
fn is_keyword(s: &str) -> bool {
    ["if", "in", "match", "while", "as", "mut", "let", "for", "loop", "else", "move"].contains(&s)
}

impl<'ast> Visit<'ast> for Fits<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if !self.ok {
            return;
        }
        let jumps = self.in_closure == 0;
        match e {
            Expr::Return(_) | Expr::Try(_) | Expr::Await(_) if jumps => self.ok = false,
            Expr::Break(b) if jumps => {
                match &b.label {
                    None if self.depth == 0 => self.ok = false,
                    Some(l) if !self.defined(l) => self.ok = false,
                    _ => {}
                }
                visit::visit_expr_break(self, b);
            }
            Expr::Continue(c) if jumps => {
                if let Some(l) = &c.label {
                    if !self.defined(l) && !self.is_own(l) {
                        self.ok = false;
                    }
                }
            }
            Expr::ForLoop(f) => self.looped(f.label.as_ref(), |v| visit::visit_expr_for_loop(v, f)),
            Expr::While(w) => self.looped(w.label.as_ref(), |v| visit::visit_expr_while(v, w)),
            Expr::Loop(l) => self.looped(l.label.as_ref(), |v| visit::visit_expr_loop(v, l)),
            // A labeled block: `break 'label` leaves only it (not a loop:
            // an unlabeled `break` inside still leaves the grid-stride loop).
            Expr::Block(b) if b.label.is_some() => {
                let l = b.label.as_ref().expect("matched");
                self.labels.push(l.name.ident.to_string());
                visit::visit_expr_block(self, b);
                self.labels.pop();
            }
            Expr::Closure(c) => {
                self.in_closure += 1;
                visit::visit_expr_closure(self, c);
                self.in_closure -= 1;
            }
            Expr::Async(_) | Expr::Const(_) => {}
            Expr::Call(c) => {
                match &*c.func {
                    Expr::Path(p) if p.qself.is_none() && callable(&p.path) => {}
                    _ => self.ok = false,
                }
                visit::visit_expr_call(self, c);
            }
            Expr::Macro(m) => self.check_macro(&m.mac),
            // A variable of the kernel's declared outside the loop and given
            // a new value in it: the closure borrows it, so the new value
            // may neither come from moving its old one out (`a = a.add(x)`
            // with a type that is not `Copy`) nor borrow what the closure
            // borrows (`slot = &mut bins[k]`).
            Expr::Assign(a) if self.outer_root(&a.left) => self.ok = false,
            Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                // A variable declared without a value: the closure cannot
                // capture it before it has one.
                let name = p.path.segments[0].ident.to_string();
                if self.uninit.contains(&name) && !self.inner.contains(&name) {
                    self.ok = false;
                }
            }
            _ => visit::visit_expr(self, e),
        }
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.check_macro(&m.mac);
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

impl Fits<'_> {
    /// Whether `place` is a variable declared outside the loop, or a field
    /// of one.
    fn outer_root(&self, place: &Expr) -> bool {
        match place {
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| !self.inner.contains(&i.to_string())),
            Expr::Field(f) => self.outer_root(&f.base),
            Expr::Paren(p) => self.outer_root(&p.expr),
            _ => false,
        }
    }

    fn check_macro(&mut self, m: &syn::Macro) {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if !MACROS.contains(&name.as_str()) || !tokens_fit(m.tokens.clone()) {
            self.ok = false;
        }
    }
}

/// The rewriting of the loop's `continue`s (its own: unlabeled outside
/// inner loops, or with its label) into `return`s from the closure.
struct Continues {
    depth: usize,
    own: Option<Label>,
    /// Labels of the loops and blocks around the expression within the body
    /// (an inner loop may shadow the grid-stride loop's label).
    inner: Vec<String>,
}

impl VisitMut for Continues {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Continue(c) => {
                let own = match &c.label {
                    None => self.depth == 0,
                    Some(l) => {
                        !self.inner.iter().any(|d| l.ident == d)
                            && self.own.as_ref().is_some_and(|o| o.name.ident == l.ident)
                    }
                };
                if own {
                    let span = c.continue_token.span;
                    *e = syn::parse2(quote_spanned! {span=> return}).expect("`return` is an expression");
                }
            }
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) | Expr::Block(_) => {
                let label = match &*e {
                    Expr::ForLoop(f) => f.label.as_ref(),
                    Expr::While(w) => w.label.as_ref(),
                    Expr::Loop(l) => l.label.as_ref(),
                    Expr::Block(b) => b.label.as_ref(),
                    _ => None,
                }
                .map(|l| l.name.ident.to_string());
                let looped = !matches!(e, Expr::Block(_));
                self.inner.extend(label.clone());
                self.depth += usize::from(looped);
                visit_mut::visit_expr_mut(self, e);
                self.depth -= usize::from(looped);
                if label.is_some() {
                    self.inner.pop();
                }
            }
            Expr::Closure(_) | Expr::Async(_) | Expr::Const(_) => {}
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// How many elements grid-stride loop `e` (what it iterates over) covers,
/// given the kernel's parameters' `names` (their arguments' specs are in
/// this order),
/// as an `Option<usize>` the launch computes: `p.grid_stride()` and
/// `grid_stride(p.len())` of a slice parameter `p` its length,
/// `grid_stride(n)` (or `n as usize`) of a parameter `n` its value; else
/// `None` (not known before the body runs).
pub(super) fn loop_length(e: &syn::Expr, names: &[&syn::Ident]) -> TokenStream {
    let param = |e: &syn::Expr| -> Option<usize> {
        let syn::Expr::Path(p) = e else { return None };
        let id = p.path.get_ident()?;
        names.iter().position(|q| *q == id)
    };
    let elements = |k: usize| quote!(__offload_args[#k].elements());
    match e {
        syn::Expr::MethodCall(m) if m.method == "grid_stride" && m.args.is_empty() => {
            param(&m.receiver).map_or(quote!(None), elements)
        }
        syn::Expr::Call(c) if c.args.len() == 1 => {
            let arg = &c.args[0];
            match arg {
                syn::Expr::MethodCall(m) if m.method == "len" && m.args.is_empty() => {
                    param(&m.receiver).map_or(quote!(None), elements)
                }
                syn::Expr::Cast(cast) if param(&cast.expr).is_some() => {
                    let n = &cast.expr;
                    quote!(::core::convert::TryFrom::try_from(#n).ok())
                }
                _ if param(arg).is_some() => quote!(::core::convert::TryFrom::try_from(#arg).ok()),
                _ => quote!(None),
            }
        }
        _ => quote!(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fits_src(src: &str) -> bool {
        let f: ExprForLoop = syn::parse_str(src).unwrap();
        fits(&f, &["tmp".to_string()])
    }

    #[test]
    fn loops_that_cannot_leave_or_wait_fit() {
        for src in [
            "for i in grid_stride(n) { s += a[i] * b[i]; }",
            "for i in grid_stride(n) { local.atomic(d[i] as usize).fetch_add(1, Relaxed); }",
            "for (i, x) in out.grid_stride() { if a[i] < 0.0 { continue; } *x = f32::max(a[i], 0.0).sqrt(); }",
            "'o: for i in grid_stride(n) { for j in 0..4 { if j == i { continue 'o; } break; } }",
            "for i in grid_stride(n) { let v = Some(core::cmp::max(i, thread_idx().x as usize)); assert!(v.is_some(), \"{i}\"); }",
            "for i in grid_stride(n) { s += a[i].iter().map(|x| { if *x > 2 { return 1; } *x }).sum::<u32>(); }",
            "for (i, o) in out.grid_stride() { let mut t = 0; t = x[i]; let tmp = 2; *o = t + tmp; m[i] = 1; }",
        ] {
            assert!(fits_src(src), "{src}");
        }
        assert!(!fits_src("for i in grid_stride(n) { let f = |x: usize| x; s += f(i); }"), "a closure's call may wait");
    }

    #[test]
    fn loops_that_may_leave_or_wait_do_not() {
        for src in [
            "for i in grid_stride(n) { if a[i] < 0.0 { break; } }",
            "for i in grid_stride(n) { if a[i] < 0.0 { return; } }",
            "for i in grid_stride(n) { g(i)?; }",
            "'o: for i in grid_stride(n) { for j in 0..4 { break 'o; } }",
            "for i in grid_stride(n) { 'b: { if i > 0 { break; } } }",
            "for i in grid_stride(n) { s += helper(a[i]); }",
            "for i in grid_stride(n) { s += crate::mix(a[i]); }",
            "for i in grid_stride(n) { s += Type::new(a[i]).x; }",
            "for i in grid_stride(n) { println!(\"{}\", helper(i)); }",
            "for i in grid_stride(n) { my_macro!(i); }",
            "for i in grid_stride(n) { x.f().await; }",
            "for i in grid_stride(n) { a = a.add(x[i]); }",
            "for i in grid_stride(n) { *slot += 1; slot = &mut bins[i % 8]; }",
            "for i in grid_stride(n) { pair.1 = pair.1.max(x[i]); }",
            "for i in grid_stride(n) { tmp = x[i]; s += tmp; }",
            "#[cfg(any())] for i in grid_stride(n) { s += x[i]; }",
        ] {
            assert!(!fits_src(src), "{src}");
        }
    }

    #[test]
    fn the_loops_continues_become_returns() {
        let f: ExprForLoop = syn::parse_str(
            "'o: for i in grid_stride(n) { if c { continue; } for j in 0..2 { continue; continue 'o; } }",
        )
        .unwrap();
        let out = lockstepped(f).to_string();
        assert!(out.starts_with("{ :: offload :: __private :: lockstep (grid_stride (n) , | i |"), "{out}");
        assert_eq!(out.matches("return").count(), 2, "{out}");
        assert_eq!(out.matches("continue").count(), 1, "the inner loop's own stays: {out}");
        let f: ExprForLoop =
            syn::parse_str("'o: for i in grid_stride(n) { 'o: for j in 0..2 { continue 'o; } 'b: { continue 'o; } }")
                .unwrap();
        let out = lockstepped(f).to_string();
        assert_eq!(out.matches("continue 'o").count(), 1, "the inner loop's label shadows: {out}");
        assert_eq!(out.matches("return").count(), 1, "{out}");
        assert!(out.ends_with(". await }"), "{out}");
    }
}
