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
//! In such a body, each grid-stride loop (`for … in grid_stride(n)` or
//! `for … in x.grid_stride()`) also awaits `__private::StepCounter::tick`
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

/// `block` with its barriers awaited, or `None` if it has none that the
/// macro sees (the host body then stays a plain function).
pub(super) fn rewrite(block: &syn::Block) -> Option<syn::Block> {
    let mut v = Awaits { found: 0 };
    let mut block = block.clone();
    v.visit_block_mut(&mut block);
    (v.found > 0).then_some(block)
}

/// The rewriting visitor; `found` counts the barriers it rewrote.
struct Awaits {
    found: usize,
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
            }
            Expr::ForLoop(f) => {
                visit_mut::visit_expr_for_loop_mut(self, f);
                if is_grid_stride(&f.expr) {
                    let new = stepped(f.clone());
                    *e = syn::parse2(new).expect("the stepped loop is an expression");
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
    fn grid_stride_loops_of_a_body_with_barriers_step() {
        let out = rewritten(
            "{ for i in offload::grid_stride(n) { s += a[i]; } sync_threads(); \
             'o: for (i, x) in out.grid_stride() { for j in 0..4 { continue 'o; } } \
             for i in 0..n {} let f = || for i in grid_stride(n) {}; }",
        )
        .unwrap();
        assert_eq!(out.matches("__offload_step . tick () . await").count(), 2, "{out}");
        assert_eq!(out.matches(". await").count(), 3, "{out}");
        assert!(out.contains("'o : for (i , x) in out . grid_stride () { __offload_step . tick () . await ;"), "{out}");
        assert_eq!(rewritten("{ for i in grid_stride(n) { s += a[i]; } }"), None, "no barrier: a plain function");
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
