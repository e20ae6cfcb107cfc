//! Cargo-style status lines on stderr: a right-aligned, bold green verb in a
//! 12-column field, then the message (`   Compiling foo v0.1.0`). Colors
//! follow `CARGO_TERM_COLOR` (`always`, `never`, `auto`) and whether stderr
//! is a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences status lines (`-q`).
pub fn set_quiet(q: bool) {
    QUIET.store(q, Ordering::Relaxed);
}

/// Whether stderr gets ANSI colors.
pub fn color() -> bool {
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
