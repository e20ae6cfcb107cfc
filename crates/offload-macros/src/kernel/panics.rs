//! Panic messages with format arguments in a kernel body, for the device
//! side: `panic!(fmt, args…)`, `assert!(cond, fmt, args…)`, `assert_eq!`
//! and `assert_ne!` (with and without a message), `unreachable!(fmt,
//! args…)`, `todo!(fmt, args…)` and `unimplemented!(fmt, args…)` become,
//! in optimized NVPTX builds, a call of
//! `offload::__private::panic_format` with the message's format string and
//! its argument values, which the host formats (see offload's
//! `report::panic_args`); elsewhere (debug assertions, AMD GPUs) the macro
//! stays as the user wrote it, behind `cfg`s. The host launcher's body is
//! not rewritten: the host fallback panics with the user's macro.
//!
//! The format string is made explicit ([`message`]): every `{…}` names its
//! argument by index, and named arguments (`name = expr`) and captured
//! variables (`{i}`) become arguments after the positional ones, as in
//! `format_args!`. The messages of `assert_eq!`, `assert_ne!`,
//! `unreachable!`, `todo!` and `unimplemented!` are `core`'s
//! (`core::panicking::assert_failed_inner`, `core::panic::unreachable_2021`,
//! `core::todo`, `core::unimplemented`) around the user's. A macro whose
//! format string has a width or precision taken from an argument (`$` or
//! `*`) panics in optimized NVPTX builds with
//! `offload::UNRECORDED_PANIC_MESSAGE`, which says so (not the note that
//! suggests `#[offload::record_panics]`, which cannot help there); one
//! whose arguments this does not understand otherwise (a format string
//! that is not a literal, a malformed string) is left alone: it panics as
//! before or gets rustc's own error.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Macro, Stmt, Token};

/// How many argument values a record holds (offload's `panic_args::ARGS`;
/// the generated array's type checks that they agree).
const ARGS: usize = 8;

/// `block` with its panicking macros rewritten for the device (see the module docs).
pub(crate) fn rewrite(block: &syn::Block) -> syn::Block {
    let mut block = block.clone();
    Rewriter.visit_block_mut(&mut block);
    block
}

struct Rewriter;

impl VisitMut for Rewriter {
    // Items and `const` blocks inside the body are left alone: a `const`
    // context cannot call the recorder.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}

    fn visit_expr_const_mut(&mut self, _: &mut syn::ExprConst) {}

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        if let Expr::Macro(m) = e {
            if let Some(t) = device_macro(&m.mac) {
                *e = Expr::Verbatim(t);
            }
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        visit_mut::visit_stmt_mut(self, s);
        if let Stmt::Macro(m) = s {
            if let Some(t) = device_macro(&m.mac) {
                *s = Stmt::Expr(Expr::Verbatim(t), m.semi_token);
            }
        }
    }
}

/// The macro's replacement: the recorder call in optimized NVPTX builds,
/// `mac` itself elsewhere; `None` if `mac` is not one of the macros or its
/// arguments are not understood.
fn device_macro(mac: &Macro) -> Option<TokenStream> {
    let name = macro_name(&mac.path)?;
    let args = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated).ok()?;
    let args: Vec<Expr> = args.into_iter().collect();
    let span = mac.path.span();
    let prefix = match name.as_str() {
        "unreachable" => "internal error: entered unreachable code: ",
        "todo" => "not yet implemented: ",
        "unimplemented" => "not implemented: ",
        _ => "",
    };
    let record = match (name.as_str(), args.as_slice()) {
        ("panic" | "unreachable" | "todo" | "unimplemented", [fmt, rest @ ..])
            if !rest.is_empty() || has_arguments(fmt) =>
        {
            message_or_unrecorded(span, literal(fmt)?, rest, prefix)
        }
        ("assert", [cond, fmt, rest @ ..]) if !rest.is_empty() || has_arguments(fmt) => {
            let r = message_or_unrecorded(span, literal(fmt)?, rest, "");
            quote_spanned!(span=> if !(#cond) { #r })
        }
        ("assert_eq" | "assert_ne", [left, right, message_args @ ..]) => {
            compare(span, &name, left, right, message_args)?
        }
        _ => return None,
    };
    let device = quote!(all(target_arch = "nvptx64", not(debug_assertions)));
    Some(quote_spanned! {span=>
        {
            #[cfg(#device)]
            { #record };
            #[cfg(not(#device))]
            { #mac };
        }
    })
}

/// `panic`, `assert`, `assert_eq`, `assert_ne`, `unreachable`, `todo` or
/// `unimplemented` when `path` names one (alone or under `core::`/`std::`).
fn macro_name(path: &syn::Path) -> Option<String> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let name = match segs.as_slice() {
        [name] if path.leading_colon.is_none() => name,
        [krate, name] if krate == "core" || krate == "std" => name,
        _ => return None,
    };
    ["panic", "assert", "assert_eq", "assert_ne", "unreachable", "todo", "unimplemented"]
        .contains(&name.as_str())
        .then(|| name.clone())
}

/// The recorder call of the message of `fmt` with `rest` after `prefix`
/// ([`message`], [`record`]); where `fmt` takes a width or precision from
/// an argument (`$`, `*`), which the record cannot hold, the panic with
/// `offload::UNRECORDED_PANIC_MESSAGE` at the macro's location.
fn message_or_unrecorded(span: Span, fmt: &LitStr, rest: &[Expr], prefix: &str) -> TokenStream {
    match message(fmt, rest, prefix) {
        Some(m) => record(span, &m),
        None => quote_spanned!(span=> ::offload::__private::panic_unrecorded()),
    }
}

/// `assert_eq!(left, right[, fmt, args…])` / `assert_ne!`: `core`'s
/// comparison and message (`assert_failed_inner`), `left` and `right` as
/// the last two arguments, formatted with `{:?}`.
fn compare(span: Span, name: &str, left: &Expr, right: &Expr, message_args: &[Expr]) -> Option<TokenStream> {
    let (op, test) = if name == "assert_eq" { ("==", quote!(==)) } else { ("!=", quote!(!=)) };
    let head = format!("assertion `left {op} right` failed");
    let (l, r) = (Ident::new("__offload_left", Span::mixed_site()), Ident::new("__offload_right", Span::mixed_site()));
    let rec = match message_args {
        [] => compare_record(span, Message { text: escape(&head), args: Vec::new() }, &l, &r),
        [fmt, rest @ ..] => match message(literal(fmt)?, rest, &format!("{head}: ")) {
            Some(m) => compare_record(span, m, &l, &r),
            None => quote_spanned!(span=> ::offload::__private::panic_unrecorded()),
        },
    };
    Some(quote_spanned! {span=>
        match (&(#left), &(#right)) {
            (#l, #r) => {
                if !(*#l #test *#r) { #rec }
            }
        }
    })
}

/// The recorder call of `assert_eq!`'s message `m` with `left` and
/// `right` (`l`, `r`) after its arguments, formatted with `{:?}`.
fn compare_record(span: Span, m: Message, l: &Ident, r: &Ident) -> TokenStream {
    let n = m.args.len();
    let text = format!("{}\n  left: {{{n}:?}}\n right: {{{}:?}}", m.text, n + 1);
    let mut args = m.args;
    args.extend([quote!(*#l), quote!(*#r)]);
    record(span, &Message { text, args })
}

/// A message made explicit: the format string with every argument by
/// index, and the arguments' expressions in index order.
struct Message {
    text: String,
    args: Vec<TokenStream>,
}

/// The string literal `e`, if it is one.
fn literal(e: &Expr) -> Option<&LitStr> {
    match e {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s),
        // A `$fmt:expr` of a `macro_rules!` arrives in an invisible group.
        Expr::Group(g) => literal(&g.expr),
        _ => None,
    }
}

/// Whether `e` is a string literal with a `{…}` argument (not `{{`): a
/// message with captured variables, formatted even without arguments.
fn has_arguments(e: &Expr) -> bool {
    let Some(s) = literal(e) else { return false };
    s.value().replace("{{", "").contains('{')
}

/// `{` and `}` of `s` doubled: `s` as a format string's text.
fn escape(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

/// The message of format string `fmt` with arguments `rest` (positional,
/// then `name = expr`), after the literal text `prefix`;
/// `None` where [`explicit`] finds the string not understood.
fn message(fmt: &LitStr, rest: &[Expr], prefix: &str) -> Option<Message> {
    let mut positional = Vec::new();
    let mut named: Vec<(String, &Expr)> = Vec::new();
    for e in rest {
        match e {
            Expr::Assign(a) => match &*a.left {
                Expr::Path(p) if p.path.get_ident().is_some() && p.attrs.is_empty() => {
                    named.push((p.path.get_ident()?.to_string(), &a.right));
                }
                _ => return None,
            },
            // Positional after named: rustc's error.
            _ if !named.is_empty() => return None,
            e => positional.push(e),
        }
    }
    let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
    let (text, captures) = explicit(&fmt.value(), positional.len(), &names)?;
    let mut args: Vec<TokenStream> = positional.iter().map(|e| e.to_token_stream()).collect();
    args.extend(named.iter().map(|(_, e)| e.to_token_stream()));
    // A captured variable resolves where the literal is, as in `format_args!`.
    args.extend(captures.iter().map(|c| Ident::new(c, fmt.span()).to_token_stream()));
    Some(Message { text: format!("{}{text}", escape(prefix)), args })
}

/// `fmt` with every argument by index (`{N}`, `{N:spec}`): `{}` counts
/// up from 0, `{name}` is the named argument's index (after the
/// `positional` ones) or a captured variable's (after the named ones, in
/// order of first use). Returns the text and the captured variables'
/// names; `None` for a malformed string, an index past the arguments, or
/// a spec with `$` or `*`.
fn explicit(fmt: &str, positional: usize, named: &[&str]) -> Option<(String, Vec<String>)> {
    let (mut out, mut captures, mut next) = (String::new(), Vec::<String>::new(), 0);
    let mut rest = fmt;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (c, after) = (&rest[i..i + 1], &rest[i + 1..]);
        if let Some(tail) = after.strip_prefix(c) {
            out.push_str(&rest[i..i + 2]);
            rest = tail;
            continue;
        }
        if c == "}" {
            return None;
        }
        let end = after.find('}')?;
        let (arg, spec) = after[..end].split_once(':').map_or((&after[..end], None), |(a, s)| (a, Some(s)));
        if spec.is_some_and(|s| s.contains(['$', '*', '{'])) {
            return None;
        }
        let arg = arg.trim_end();
        let index = if arg.is_empty() {
            next += 1;
            next - 1
        } else if let Ok(k) = arg.parse::<usize>() {
            k
        } else if let Some(k) = named.iter().position(|n| *n == arg) {
            positional + k
        } else if is_identifier(arg) {
            let k = captures.iter().position(|c| c == arg).unwrap_or_else(|| {
                captures.push(arg.to_string());
                captures.len() - 1
            });
            positional + named.len() + k
        } else {
            return None;
        };
        if index >= positional + named.len() + captures.len() {
            return None;
        }
        out.push_str(&match spec {
            Some(s) if !s.is_empty() => format!("{{{index}:{s}}}"),
            _ => format!("{{{index}}}"),
        });
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some((out, captures))
}

/// A Rust identifier (ASCII; not `_`, not raw).
fn is_identifier(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s != "_"
}

/// The call that records message `m` (evaluating each argument once, by
/// reference, as `format_args!` does; the first `ARGS` as values or
/// placeholders by type), with a `static` for the format string and the
/// location (`Location::caller()` there is the macro's: its tokens carry
/// the macro's span).
fn record(span: Span, m: &Message) -> TokenStream {
    let hygienic = |name: &str, k: usize| format_ident!("__offload_{}{}", name, k, span = Span::mixed_site());
    let binds: Vec<Ident> = (0..m.args.len()).map(|k| hygienic("a", k)).collect();
    let args = &m.args;
    let recorded = &binds[..binds.len().min(ARGS)];
    let (tags, bits): (Vec<Ident>, Vec<Ident>) =
        (0..recorded.len()).map(|k| (hygienic("t", k), hygienic("v", k))).unzip();
    let shifts = 0..recorded.len() as u32;
    let (all, site) = (Ident::new("__offload_tags", Span::mixed_site()), Ident::new("__OFFLOAD_SITE", span));
    let text = LitStr::new(&m.text, span);
    quote_spanned! {span=>
        match (#(&(#args),)*) {
            (#(#binds,)*) => {
                #[allow(unused_imports)]
                use ::offload::__private::{FmtPlaceholder as _, FmtValue as _};
                static #site: ::offload::__private::PanicSite =
                    ::offload::__private::PanicSite::new(#text, ::core::panic::Location::caller());
                #(let (#tags, #bits): (u32, u64) = (&::offload::__private::FmtArg(#recorded)).__offload_fmt_arg();)*
                let #all = 0u32 #(| #tags << (#shifts * ::offload::__private::TAG_BITS))*;
                ::offload::__private::panic_format(&#site, #all, [#(#bits),*])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Implicit, positional, named and captured arguments get explicit
    /// indices in `format_args!`'s order; escapes and specs stay.
    #[test]
    fn format_strings_become_explicit() {
        // (format string, positional arguments, named ones, the explicit
        // string, the captured variables)
        type Case<'a> = (&'a str, usize, &'a [&'a str], &'a str, &'a [&'a str]);
        let cases: [Case; 7] = [
            ("i = {} n = {}", 2, &[], "i = {0} n = {1}", &[]),
            ("{1:>4} {} {0:#x} {}", 2, &[], "{1:>4} {0} {0:#x} {1}", &[]),
            ("{i} and {n:?} then {i:x}", 0, &[], "{0} and {1:?} then {0:x}", &["i", "n"]),
            ("{a} {} {b} {c}", 1, &["c"], "{2} {0} {3} {1}", &["a", "b"]),
            ("{{literal}} {} }}{{", 1, &[], "{{literal}} {0} }}{{", &[]),
            ("{:} {0 } {:+08.3e}", 2, &[], "{0} {0} {1:+08.3e}", &[]),
            ("no arguments", 0, &[], "no arguments", &[]),
        ];
        for (fmt, positional, named, text, captures) in cases {
            let (t, c) = explicit(fmt, positional, named).unwrap_or_else(|| panic!("{fmt}: not understood"));
            assert_eq!((t.as_str(), c), (text, captures.iter().map(|s| s.to_string()).collect()), "{fmt}");
        }
    }

    /// What the rewrite leaves to rustc or to the placeholder.
    #[test]
    fn strings_not_understood_are_left_alone() {
        for (fmt, positional) in
            [("{:>1$}", 2), ("{:.*}", 2), ("{} {}", 1), ("{2}", 2), ("a } b", 0), ("{", 0), ("{9x}", 0), ("{_}", 0)]
        {
            assert_eq!(explicit(fmt, positional, &[]), None, "{fmt}");
        }
    }

    /// Which macros are rewritten: those with arguments (or captures), and
    /// `assert_eq!`/`assert_ne!` always; a format string that is not a
    /// literal is not.
    #[test]
    fn macros_with_arguments_are_rewritten() {
        let rewritten = |src: &str| device_macro(&syn::parse_str::<Macro>(src).unwrap()).is_some();
        for src in [
            "panic!(\"{}\", i)",
            "core::panic!(\"{i}\")",
            "std::assert!(i < n, \"i = {} n = {}\", i, n)",
            "assert_eq!(a, b)",
            "assert_ne!(a, b, \"at {}\", i)",
            "unreachable!(\"{x:?}\")",
            "todo!(\"{}\", i)",
            "std::unimplemented!(\"{i}\")",
            "panic!(\"{:>1$}\", i, w)",
        ] {
            assert!(rewritten(src), "{src}");
        }
        for src in [
            "panic!(\"literal\")",
            "panic!()",
            "assert!(c)",
            "assert!(c, \"literal {{}}\")",
            "panic!(MESSAGE, i)",
            "unreachable!()",
            "todo!()",
            "other::panic!(\"{}\", i)",
            "assert_eq!(a, b, MESSAGE)",
        ] {
            assert!(!rewritten(src), "{src}");
        }
    }

    /// A format string that comes through a `macro_rules!` `$fmt:expr`
    /// (an invisible group around the literal) is rewritten like a
    /// literal one: it was silently left to the placeholder.
    #[test]
    fn a_format_string_from_a_macro_rules_argument_is_rewritten() {
        let lit = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote::quote!("i = {} n = {}"));
        let arg = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote::quote!(i));
        for m in [syn::parse_quote!(assert!(i < n, #lit, #arg, n)), syn::parse_quote!(panic!(#lit, i, n))] {
            let m: Macro = m;
            assert!(device_macro(&m).is_some(), "{}", m.to_token_stream());
        }
    }

    /// Nested items and `const` blocks keep their macros (a `const`
    /// context cannot call the recorder); closures do not.
    #[test]
    fn const_contexts_are_left_alone() {
        let block: syn::Block = syn::parse_quote!({
            const fn f(s: &str) {
                panic!("{}", s)
            }
            let _ = const { assert!(true, "{}", 1) };
            let g = |i: u32| panic!("{}", i);
        });
        let out = rewrite(&block).to_token_stream().to_string();
        assert_eq!(out.matches("panic_format").count(), 1, "{out}");
        assert!(out.contains("const fn f (s : & str) { panic ! (\"{}\" , s) }"), "{out}");
    }

    /// `assert_eq!`'s message is `core`'s, the user's message inside it.
    #[test]
    fn assert_eq_messages_are_cores() {
        let out = |src: &str| device_macro(&syn::parse_str::<Macro>(src).unwrap()).unwrap().to_string();
        assert!(out("assert_eq!(a, b)").contains(r#""assertion `left == right` failed\n  left: {0:?}\n right: {1:?}""#));
        let with = out("assert_ne!(a, b, \"at {} of {n}\", i)");
        assert!(
            with.contains(r#""assertion `left != right` failed: at {0} of {1}\n  left: {2:?}\n right: {3:?}""#),
            "{with}"
        );
        assert!(out("unreachable!(\"{}\", 3)").contains(r#""internal error: entered unreachable code: {0}""#));
    }

    /// The messages of `unreachable!`, `todo!` and `unimplemented!` with
    /// arguments are `core`'s: the explicit format string with the values
    /// put in reads as the host's panic message.
    #[test]
    fn core_prefixes_are_cores() {
        let host = |f: fn()| -> String {
            let payload = std::panic::catch_unwind(f).expect_err("panics");
            // `&str` where rustc folded the literal values into the message.
            let text = payload.downcast_ref::<String>().cloned();
            text.or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).expect("a message")
        };
        let cases: [(&str, fn()); 3] = [
            ("unreachable!(\"at {} of {}\", 3, 7)", || unreachable!("at {} of {}", 3, 7)),
            ("todo!(\"at {} of {}\", 3, 7)", || todo!("at {} of {}", 3, 7)),
            ("unimplemented!(\"at {} of {}\", 3, 7)", || unimplemented!("at {} of {}", 3, 7)),
        ];
        for (src, f) in cases {
            let out = device_macro(&syn::parse_str::<Macro>(src).unwrap()).unwrap().to_string();
            // The site's format string: the first string literal of the call.
            let text = out.split("PanicSite :: new (\"").nth(1).and_then(|t| t.split("\" ,").next()).expect("a site");
            assert_eq!(text.replace("{0}", "3").replace("{1}", "7"), host(f), "{src}");
        }
    }

    /// A width or precision from an argument: the device panics with
    /// offload's `UNRECORDED_PANIC_MESSAGE` (not the note that names
    /// `#[offload::record_panics]`), the host keeps the user's macro.
    #[test]
    fn widths_from_arguments_panic_with_the_unrecorded_message() {
        for src in [
            "panic!(\"{:>1$}\", i, w)",
            "assert!(c, \"{:.*}\", 2, x)",
            "assert_eq!(a, b, \"{:w$}\", i, w = 3)",
            "todo!(\"{:1$}\", i, w)",
        ] {
            let out = device_macro(&syn::parse_str::<Macro>(src).unwrap()).unwrap().to_string();
            assert!(out.contains("panic_unrecorded ()") && !out.contains("panic_format"), "{src}: {out}");
        }
    }
}
