//! Cargo-style status lines on stderr: a right-aligned, bold green verb in a
//! 12-column field, then the message (`   Compiling foo v0.1.0`). Colors
//! follow `--color`, else `CARGO_TERM_COLOR` (`always`, `never`, `auto`),
//! and whether stderr is a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);
/// `--color`: 0 none, 1 `always`, 2 `never`, 3 `auto`.
static COLOR: AtomicU8 = AtomicU8::new(0);

/// Silences status lines (`-q`).
pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// `--color` (`auto`, `always`, `never`), which wins over `CARGO_TERM_COLOR`.
pub fn set_color(when: Option<&str>) {
    COLOR.store(
        match when {
            Some("always") => 1,
            Some("never") => 2,
            Some("auto") => 3,
            _ => 0,
        },
        Ordering::Relaxed,
    );
}

/// Whether stderr gets ANSI colors.
pub fn color() -> bool {
    match COLOR.load(Ordering::Relaxed) {
        1 => return true,
        2 => return false,
        3 => return std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        _ => {}
    }
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok("always") => true,
        Ok("never") => false,
        _ => std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

fn line(verb: &str, msg: &str, code: &str) -> String {
    if color() {
        format!("\x1b[1m\x1b[{code}m{verb:>12}\x1b[0m {msg}")
    } else {
        format!("{verb:>12} {msg}")
    }
}

/// `1 crate`, `2 crates`: `n` and `what`, plural with an `s` unless `n` is 1.
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// `   Compiling …`-style progress (green).
pub fn status(verb: &str, msg: impl std::fmt::Display) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{}", line(verb, &msg.to_string(), "32"));
    }
}

/// A warning line (`warning: …`, yellow).
pub fn warn(msg: impl std::fmt::Display) {
    if color() {
        eprintln!("\x1b[1m\x1b[33mwarning\x1b[0m\x1b[1m:\x1b[0m {msg}");
    } else {
        eprintln!("warning: {msg}");
    }
}

/// A note line (`note: …`, bold, as cargo prints notes); silenced by `-q`.
pub fn note(msg: impl std::fmt::Display) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    if color() {
        eprintln!("\x1b[1m\x1b[36mnote\x1b[0m\x1b[1m:\x1b[0m {msg}");
    } else {
        eprintln!("note: {msg}");
    }
}

/// `error: ` in bold red, as cargo prints it.
pub fn error_prefix() -> &'static str {
    if color() {
        "\x1b[1m\x1b[31merror\x1b[0m\x1b[1m:\x1b[0m "
    } else {
        "error: "
    }
}
