//! The host side's barriers: each `sync_threads()` call of a kernel's body
//! (outside closures, nested items, `async` and `const` blocks, and macro
//! arguments) becomes an await of `__private::Barrier`, so that the host
//! body can be an `async fn` that the host fallback runs in phases, one
//! poll per thread from one barrier to the next (`offload::hostsim::phases`),
//! with rustc keeping the values that live across a barrier in the
//! thread's future (MCUDA's and POCL's per-thread storage, laid out and
//! borrow-checked by the compiler). The device side keeps the body as
//! written.
//!
//! The macro sees names, not functions: `sync_threads()` may be a function
//! of the user's. The rewritten call keeps it: the await runs only if the
//! callee is `offload::sync_threads` (`__private::is_sync_threads`, known
//! at compile time), else the callee is called as written. A barrier the
//! macro does not see (in a function the body calls, in a closure) still
//! waits as before, on the coroutine scheduler.
//!
//! In such a body, the calls of warp collectives that the macro sees
//! (`shuffle_idx`, `shuffle_up`, `shuffle_down`, `shuffle_xor`, `ballot`,
//! `sync_warp`, `reduce_sum`, `reduce_max`, `reduce_min` by any path, and
//! `all` and `any` by a path through `warp::`) become awaits of
//! `__private::Collective`, which the block's phases meet warp by warp
//! (`offload::hostsim::awaits`). The callee is kept as for barriers: a
//! function of the user's of that name is called once, as written
//! (`__private::is_warp_fn`).
//!
//! In such a body, a grid-stride loop (`for … in grid_stride(n)` or
//! `for … in x.grid_stride()`) whose iterations cannot leave it or wait
//! runs in lockstep (`lockstep`); any other also awaits `__private::StepCounter::tick`
//! at the top of every iteration: every few iterations its thread pauses
//! and the block's other threads take their turn, so that the threads of
//! a block walk the arrays together instead of one after another
//! (`offload::hostsim::phases::Step`). A pause is not a barrier: where the
//! name `grid_stride` is not offload's, the loop only runs interleaved with
//! the block's other threads, as a GPU's threads may run.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprCall, Ident};

use super::lockstep;

/// `block` with its barriers awaited, or `None` if it has none that the
/// macro sees (the host body then stays a plain function).
pub(super) fn rewrite(block: &syn::Block) -> Option<syn::Block> {
    let (block, v) = rewritten(block);
    (v.found > 0).then_some(block)
}

/// For a body without barriers that the macro sees: `block` with its
/// grid-stride loops that fit run in lockstep (awaits, as in a body with
/// barriers), and what each such loop iterates over; `None` if it has
/// barriers or no such loop. The host fallback runs this `async` body
/// instead of the plain one when a launch's loops make several iterations
/// per thread (`__private::lockstep_pays`).
pub(super) fn lockstep_variant(block: &syn::Block) -> Option<(syn::Block, Vec<Expr>)> {
    let (block, v) = rewritten(block);
    (v.found == 0 && !v.lockstep.is_empty()).then_some((block, v.lockstep))
}

/// `block` with its barriers, warp collectives and grid-stride loops
/// rewritten, and the visitor that did it.
fn rewritten(block: &syn::Block) -> (syn::Block, Awaits) {
    let mut declared = lockstep::Declared { names: Vec::new(), uninit_only: true };
    syn::visit::Visit::visit_block(&mut declared, block);
    let mut v = Awaits { found: 0, awaits: 0, uninit: declared.names, lockstep: Vec::new() };
    let mut block = block.clone();
    v.visit_block_mut(&mut block);
    (block, v)
}

/// The rewriting visitor; `found` counts the barriers it rewrote,
/// `awaits` every await it made (barriers, collectives, grid-stride loops).
struct Awaits {
    found: usize,
    awaits: usize,
    /// The names the body declares without a value (`let x;`).
    uninit: Vec<String>,
    /// What each loop made a lockstep loop iterates over.
    lockstep: Vec<Expr>,
}

/// Whether `call` is `sync_threads()` (any path whose last segment is
/// `sync_threads`, without generic arguments or call arguments).
fn is_barrier_call(call: &ExprCall) -> bool {
    let Expr::Path(p) = &*call.func else { return false };
    let last = p.path.segments.last();
    p.qself.is_none()
        && call.args.is_empty()
        && last.is_some_and(|s| s.ident == "sync_threads" && s.arguments.is_none())
}

/// The warp collective that `call` names, as `__private::WarpFn`'s
/// variant, if its last path segment is one (and, for `all` and `any`,
/// the segment before it is `warp`) with the collective's number of
/// arguments.
fn warp_call(call: &ExprCall) -> Option<&'static str> {
    let Expr::Path(p) = &*call.func else { return None };
    let segs = &p.path.segments;
    let last = segs.last()?;
    let via_warp = segs.len() >= 2 && segs[segs.len() - 2].ident == "warp";
    let (variant, args) = match last.ident.to_string().as_str() {
        "shuffle_idx" => ("ShuffleIdx", 2),
        "shuffle_up" => ("ShuffleUp", 2),
        "shuffle_down" => ("ShuffleDown", 2),
        "shuffle_xor" => ("ShuffleXor", 2),
        "ballot" => ("Ballot", 1),
        "sync_warp" => ("SyncWarp", 0),
        "reduce_sum" => ("ReduceSum", 1),
        "reduce_max" => ("ReduceMax", 1),
        "reduce_min" => ("ReduceMin", 1),
        "all" if via_warp => ("All", 1),
        "any" if via_warp => ("Any", 1),
        _ => return None,
    };
    (p.qself.is_none() && call.args.len() == args).then_some(variant)
}

/// The await that replaces the call of warp collective `variant`: the
/// callee and the arguments evaluated as a call evaluates them (in order,
/// temporaries alive to the end), then awaited.
fn collective(call: &ExprCall, variant: &str) -> TokenStream {
    let (func, args) = (&call.func, call.args.iter());
    let (f, a) =
        (Ident::new("__offload_warp_fn", Span::mixed_site()), Ident::new("__offload_warp_args", Span::mixed_site()));
    let v = Ident::new(variant, call.span());
    quote_spanned! {call.span()=>
        match (#func, (#(#args,)*)) {
            (#f, #a) => ::offload::__private::Collective::new(#f, #a, ::offload::__private::WarpFn::#v).await,
        }
    }
}

/// Whether `e`, what a `for` loop iterates over, is a grid-stride loop's:
/// a call of a function named `grid_stride` or of a method of that name.
fn is_grid_stride(e: &Expr) -> bool {
    match e {
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "grid_stride"))
        }
        Expr::MethodCall(m) => m.method == "grid_stride",
        _ => false,
    }
}

/// Grid-stride loop `f` with a step awaited at the top of each iteration,
/// in a block that holds the loop's step counter.
fn stepped(mut f: syn::ExprForLoop) -> TokenStream {
    let c = Ident::new("__offload_step", Span::mixed_site());
    let tick: syn::Stmt = syn::parse_quote_spanned! {f.for_token.span=> #c.tick().await;};
    f.body.stmts.insert(0, tick);
    quote_spanned! {f.for_token.span=>
        {
            let mut #c = ::offload::__private::StepCounter::default();
            #f
        }
    }
}

/// The await that replaces barrier call `call`.
fn awaited(call: &ExprCall) -> TokenStream {
    let func = &call.func;
    let f = Ident::new("__offload_barrier_fn", Span::mixed_site());
    quote_spanned! {call.span()=>
        {
            let #f = #func;
            if ::offload::__private::is_sync_threads(&#f) {
                ::offload::__private::Barrier::default().await
            } else {
                #f()
            }
        }
    }
}

impl VisitMut for Awaits {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Call(call) if is_barrier_call(call) => {
                let new = awaited(call);
                *e = syn::parse2(new).expect("the rewritten barrier is an expression");
                self.found += 1;
                self.awaits += 1;
            }
            Expr::Call(call) if warp_call(call).is_some() => {
                visit_mut::visit_expr_call_mut(self, call);
                let new = collective(call, warp_call(call).expect("matched"));
                *e = syn::parse2(new).expect("the awaited collective is an expression");
                self.awaits += 1;
            }
            Expr::ForLoop(f) => {
                let before = self.awaits;
                visit_mut::visit_expr_for_loop_mut(self, f);
                if is_grid_stride(&f.expr) {
                    let new = if self.awaits == before && lockstep::fits(f, &self.uninit) {
                        self.lockstep.push((*f.expr).clone());
                        lockstep::lockstepped(f.clone())
                    } else {
                        stepped(f.clone())
                    };
                    *e = syn::parse2(new).expect("the rewritten grid-stride loop is an expression");
                    self.awaits += 1;
                }
            }
            // The body is an `async fn` on the host only: a user's `.await`
            // would compile there and not on the device (E0728), and could
            // wait forever. The same error on both.
            Expr::Await(a) => {
                let msg = "a kernel cannot `.await`: kernels are not `async` (on the device rustc \
                           rejects it, E0728); call the code the future would run instead";
                *e = syn::parse2(quote_spanned! {a.await_token.span=> ::core::compile_error!(#msg)})
                    .expect("compile_error! is an expression");
            }
            // Their code is not the body's `async fn`: an await there would
            // belong to another function or future, or be an error.
            Expr::Closure(_) | Expr::Async(_) | Expr::Const(_) => {}
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn rewritten(src: &str) -> Option<String> {
        let block: syn::Block = syn::parse_str(src).unwrap();
        rewrite(&block).map(|b| b.to_token_stream().to_string())
    }

    #[test]
    fn barriers_in_the_body_become_awaits() {
        let out = rewritten("{ a(); sync_threads(); for i in 0..n { if c { offload::sync_threads(); } } }").unwrap();
        assert_eq!(out.matches(". await").count(), 2, "{out}");
        assert!(out.contains("let __offload_barrier_fn = offload :: sync_threads ;"), "{out}");
    }

    #[test]
    fn grid_stride_loops_of_a_body_with_barriers_step_or_run_in_lockstep() {
        let out = rewritten(
            "{ for i in offload::grid_stride(n) { s += a[i]; } sync_threads(); \
             'o: for (i, x) in out.grid_stride() { for j in 0..4 { continue 'o; } } \
             for i in grid_stride(n) { s += f(a[i]); } \
             'p: for i in grid_stride(n) { if a[i] > 0.0 { break 'p; } } \
             for i in 0..n {} let f = || for i in grid_stride(n) {}; }",
        )
        .unwrap();
        assert_eq!(out.matches("__private :: lockstep (").count(), 2, "{out}");
        assert_eq!(out.matches("__offload_step . tick () . await").count(), 2, "{out}");
        assert_eq!(out.matches(". await").count(), 5, "{out}");
        assert!(
            out.contains("lockstep (out . grid_stride () , | (i , x) | { for j in 0 .. 4 { return ; } }) . await"),
            "{out}"
        );
        assert!(out.contains("'p : for i in grid_stride (n) { __offload_step . tick () . await ;"), "{out}");
        assert!(out.contains("| | for i in grid_stride (n) { }"), "a closure's loop stays: {out}");
        assert_eq!(rewritten("{ for i in grid_stride(n) { s += a[i]; } }"), None, "no barrier: a plain function");
    }

    #[test]
    fn warp_collectives_of_a_body_with_barriers_become_awaits() {
        let out = rewritten(
            "{ let s = warp::reduce_sum(warp::shuffle_xor(v, 1)); sync_threads(); \
             let b = offload::warp::all(p) && any(q) && warp::ballot(p) != 0; \
             let c = shuffle_idx(v); let d = || reduce_max(v); }",
        )
        .unwrap();
        assert_eq!(out.matches("Collective :: new").count(), 4, "{out}");
        assert_eq!(out.matches(". await").count(), 5, "{out}");
        for v in ["ReduceSum", "ShuffleXor", "All", "Ballot"] {
            assert!(out.contains(&format!("WarpFn :: {v}")), "{v}: {out}");
        }
        assert!(out.contains("any (q)"), "`any` without `warp::` stays a call: {out}");
        assert!(out.contains("shuffle_idx (v)"), "a call with other arguments stays: {out}");
        assert!(out.contains("| | reduce_max (v)"), "a closure's collective stays: {out}");
        assert_eq!(rewritten("{ warp::reduce_sum(v); }"), None, "no barrier: a plain function");
    }

    #[test]
    fn a_users_await_is_an_error_not_an_await_of_the_host_body() {
        let out = rewritten("{ sync_threads(); let x = f().await; let y = async { g().await }; }").unwrap();
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("kernels are not `async`"), "{out}");
        assert!(out.contains("async { g () . await }"), "an async block's await stays: {out}");
    }

    #[test]
    fn barriers_in_closures_items_and_calls_with_arguments_stay() {
        for src in [
            "{ let f = || sync_threads(); f(); }",
            "{ fn g() { sync_threads(); } g(); }",
            "{ let x = async { sync_threads() }; }",
            "{ sync_threads(1); other(); x.sync_threads(); }",
            "{ println!(\"{:?}\", sync_threads()); }",
        ] {
            assert_eq!(rewritten(src), None, "{src}");
        }
    }
}
