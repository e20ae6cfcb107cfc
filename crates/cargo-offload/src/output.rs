//! Where the diagnostics of both passes go: in the format the user asked
//! for with `--message-format` (cargo's values: `human`, `short`, `json`,
//! `json-diagnostic-short`, `json-diagnostic-rendered-ansi`,
//! `json-render-diagnostics`), with the device pass's marked as such.
//!
//! The device pass always runs its cargo with JSON messages (its artifacts
//! come from them); each of its rustc diagnostics is shown as the user asked:
//! as cargo's `compiler-message` record on stdout (JSON), or its rendered
//! text on stderr (human, short, `json-render-diagnostics`). Either way it
//! gets a note naming the pass, [`mark_device`]: a child without spans, which
//! rust-analyzer appends to the message it shows at the user's span (its
//! `map_rust_child_diagnostic`), and the same `= note:` line in the rendered
//! text. The device pass's own `build-finished` record and its artifacts
//! (the device images, internal to `cargo offload`) are not shown: the
//! records on stdout are those of one cargo build.
//!
//! `check` and `clippy` run the host pass first, also with JSON messages,
//! relayed the same way ([`relay_host`]); a diagnostic of the device pass
//! that the host pass already showed (same level, message and primary span:
//! code compiled in both passes) is not shown again.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};

use serde_json::Value;

use crate::diagnostic::strip_ansi;

/// The values cargo's `--message-format` takes (comma-separated, repeatable).
pub const VALUES: &[&str] =
    &["human", "short", "json", "json-diagnostic-short", "json-diagnostic-rendered-ansi", "json-render-diagnostics"];

/// clap's check of one `--message-format` value: each comma-separated item
/// must be one of [`VALUES`].
pub fn parse_value(s: &str) -> Result<String, String> {
    match s.split(',').map(str::trim).find(|v| !VALUES.contains(v)) {
        Some(bad) => Err(format!("`{bad}` is not a message format (possible values: {})", VALUES.join(", "))),
        None => Ok(s.to_string()),
    }
}

/// cargo's check of all `--message-format` values together: one kind,
/// either `human`, `short` or JSON (`json` once, with any `json-…`
/// modifiers); cargo rejects any other mix (its `message_format` in
/// `command_prelude.rs`) with this message.
pub fn check_kinds(values: &[String]) -> Result<(), String> {
    const TWO_KINDS: &str = "cannot specify two kinds of `message-format` arguments";
    // The kind chosen so far: `Some(true)` JSON, `Some(false)` human or short.
    let mut json: Option<bool> = None;
    for v in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        json = match (v, json) {
            ("human" | "short" | "json", Some(_)) => return Err(TWO_KINDS.into()),
            ("human" | "short", None) => Some(false),
            (_, None | Some(true)) => Some(true),
            (_, Some(false)) => return Err(TWO_KINDS.into()),
        };
    }
    Ok(())
}

/// The user's `--message-format`, as cargo reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageFormat {
    /// Records on stdout (`json…`).
    pub json: bool,
    /// Diagnostics rendered short (`short`, `json-diagnostic-short`).
    pub short: bool,
    /// Rendered diagnostics in color (`json-diagnostic-rendered-ansi`).
    pub ansi: bool,
    /// Diagnostics rendered on stderr, other records JSON on stdout
    /// (`json-render-diagnostics`).
    pub render: bool,
}

impl MessageFormat {
    /// From the values of `--message-format` (already checked by [`parse_value`]).
    pub fn from_values(values: &[String]) -> MessageFormat {
        let mut f = MessageFormat::default();
        for v in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
            match v {
                "short" => f.short = true,
                "json" => f.json = true,
                "json-diagnostic-short" => (f.json, f.short) = (true, true),
                "json-diagnostic-rendered-ansi" => (f.json, f.ansi) = (true, true),
                "json-render-diagnostics" => (f.json, f.render) = (true, true),
                _ => {}
            }
        }
        f
    }

    /// Diagnostics go to stdout as `compiler-message` records.
    pub fn json_diagnostics(&self) -> bool {
        self.json && !self.render
    }

    /// The `--message-format` of a cargo whose messages `cargo offload`
    /// reads and relays: JSON, its rendered text short and in color as the
    /// user's format asks (for text on stderr: in color when `color`, as
    /// cargo colors a terminal).
    pub fn relayed(&self, color: bool) -> String {
        let mut v = vec!["json"];
        if self.short {
            v.push("json-diagnostic-short");
        }
        if (self.json_diagnostics() && self.ansi) || (!self.json_diagnostics() && color) {
            v.push("json-diagnostic-rendered-ansi");
        }
        v.join(",")
    }

    /// Shows one `compiler-message` record (a diagnostic): on stdout as
    /// JSON, or its rendered text on stderr.
    pub fn show_diagnostic(&self, record: &Value) {
        if self.json_diagnostics() {
            print_record(record);
        } else if let Some(r) = record.pointer("/message/rendered").and_then(Value::as_str) {
            eprint!("{r}");
        }
    }

    /// cargo's last record, `build-finished`, for a build that ends here (JSON only).
    pub fn finished(&self, success: bool) {
        if self.json {
            print_record(&serde_json::json!({"reason": "build-finished", "success": success}));
        }
    }
}

/// One record, one line, on stdout (line-buffered: each line goes out whole).
pub fn print_record(record: &Value) {
    println!("{record}");
}

/// What tells a diagnostic apart: level, message and primary span, as
/// `error|cannot find …|src/main.rs:4:15` (see the module docs).
pub fn key(diagnostic: &Value) -> String {
    let s = |p: &str| diagnostic.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let spans = diagnostic.get("spans").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let at = spans.iter().find(|sp| sp.get("is_primary") == Some(&Value::Bool(true))).map(|sp| {
        let n = |k: &str| sp.get(k).and_then(Value::as_u64).unwrap_or_default();
        format!(
            "{}:{}:{}",
            sp.get("file_name").and_then(Value::as_str).unwrap_or_default(),
            n("line_start"),
            n("column_start")
        )
    });
    format!("{}|{}|{}", s("/level"), s("/message"), at.unwrap_or_default())
}

/// The note of the device pass's diagnostics: `in the device pass for
/// nvptx64-nvidia-cuda sm_90`.
pub fn device_note(triple: &str, arch: &str) -> String {
    format!("in the device pass for {triple} {arch}")
}

/// Marks a rustc diagnostic (`message` of a `compiler-message` record) as
/// the device pass's: `note` as a child without spans, and as a `= note:`
/// line at the end of the rendered text, indented as rustc indents its own.
pub fn mark_device(diagnostic: &mut Value, note: &str) {
    let child = serde_json::json!({
        "$message_type": "diagnostic",
        "message": note,
        "code": null,
        "level": "note",
        "spans": [],
        "children": [],
        "rendered": null,
    });
    if let Some(children) = diagnostic.get_mut("children").and_then(Value::as_array_mut) {
        children.push(child);
    }
    if let Some(Value::String(r)) = diagnostic.get_mut("rendered") {
        *r = with_line(r, "note", note);
    }
}

/// `rendered` with a `= <kind>: <text>` line (rustc's `= note:`, `=
/// help:`) after its last line: indented as the gutter of its last line
/// (`   |`, ` 4 |`) or as its last `= …` line, else by two spaces; the
/// blank line that ends it kept.
pub fn with_line(rendered: &str, kind: &str, text: &str) -> String {
    let body = rendered.trim_end_matches('\n');
    let ending = &rendered[body.len()..];
    let last = strip_ansi(body.lines().last().unwrap_or_default());
    let equals = last.trim_start().starts_with("= ").then(|| last.len() - last.trim_start().len());
    let indent = match (equals, last.split_once('|')) {
        (Some(n), _) => " ".repeat(n),
        (None, Some((gutter, _))) if gutter.chars().all(|c| c == ' ' || c.is_ascii_digit()) => " ".repeat(gutter.len()),
        _ => "  ".to_string(),
    };
    format!("{body}\n{indent}= {kind}: {text}{}", if ending.is_empty() { "\n" } else { ending })
}

/// What the relayed host pass showed ([`relay_host`]).
#[derive(Debug, Default)]
pub struct Relayed {
    /// The [`key`] of each diagnostic.
    pub keys: HashSet<String>,
    /// Error diagnostics.
    pub errors: usize,
}

/// Relays the JSON messages of the host cargo (its stdout) as `format`
/// asks ([`MessageFormat::show_diagnostic`]; other records on stdout in
/// JSON formats; lines that are not JSON as they are), except its
/// `build-finished` record, which the cargo phase writes once both passes
/// have run.
pub fn relay_host(stdout: impl std::io::Read, format: &MessageFormat) -> Relayed {
    let mut seen = Relayed::default();
    for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
        let Ok(record) = serde_json::from_str::<Value>(&line) else {
            println!("{line}");
            continue;
        };
        match record.get("reason").and_then(Value::as_str) {
            Some("compiler-message") => {
                if let Some(d) = record.get("message") {
                    seen.keys.insert(key(d));
                    seen.errors += usize::from(d.get("level").and_then(Value::as_str) == Some("error"));
                }
                format.show_diagnostic(&record);
            }
            Some("build-finished") => {}
            _ if format.json => print_record(&record),
            _ => {}
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    /// (--message-format values, format, what a relayed cargo gets on a
    /// terminal and off one)
    #[test]
    fn formats_as_cargo_reads_them() {
        let f = |json, short, ansi, render| MessageFormat { json, short, ansi, render };
        let table: &[(&[&str], MessageFormat, &str, &str)] = &[
            (&[], f(false, false, false, false), "json,json-diagnostic-rendered-ansi", "json"),
            (&["human"], f(false, false, false, false), "json,json-diagnostic-rendered-ansi", "json"),
            (
                &["short"],
                f(false, true, false, false),
                "json,json-diagnostic-short,json-diagnostic-rendered-ansi",
                "json,json-diagnostic-short",
            ),
            (&["json"], f(true, false, false, false), "json", "json"),
            (
                &["json-diagnostic-short"],
                f(true, true, false, false),
                "json,json-diagnostic-short",
                "json,json-diagnostic-short",
            ),
            (
                &["json-diagnostic-rendered-ansi"],
                f(true, false, true, false),
                "json,json-diagnostic-rendered-ansi",
                "json,json-diagnostic-rendered-ansi",
            ),
            (
                &["json,json-diagnostic-short", "json-diagnostic-rendered-ansi"],
                f(true, true, true, false),
                "json,json-diagnostic-short,json-diagnostic-rendered-ansi",
                "json,json-diagnostic-short,json-diagnostic-rendered-ansi",
            ),
            (&["json-render-diagnostics"], f(true, false, false, true), "json,json-diagnostic-rendered-ansi", "json"),
        ];
        for (values, want, color, plain) in table {
            let got = MessageFormat::from_values(&v(values));
            assert_eq!(got, *want, "{values:?}");
            assert_eq!((got.relayed(true).as_str(), got.relayed(false).as_str()), (*color, *plain), "{values:?}");
        }
        assert!(MessageFormat::from_values(&v(&["json"])).json_diagnostics());
        assert!(!MessageFormat::from_values(&v(&["json-render-diagnostics"])).json_diagnostics());
        assert_eq!(parse_value("json,json-diagnostic-short").as_deref(), Ok("json,json-diagnostic-short"));
        assert_eq!(
            parse_value("json,jsn").unwrap_err(),
            "`jsn` is not a message format (possible values: human, short, json, json-diagnostic-short, \
             json-diagnostic-rendered-ansi, json-render-diagnostics)"
        );
    }

    /// Mixes cargo rejects (checked against cargo 1.95: `cargo check
    /// --message-format=json,short` exits with this message).
    #[test]
    fn two_kinds_of_message_format_are_rejected() {
        let two = Err("cannot specify two kinds of `message-format` arguments".to_string());
        for bad in [
            &["json,short"][..],
            &["short", "json"],
            &["json", "json"],
            &["human,short"],
            &["short,json-diagnostic-short"],
            &["json-diagnostic-short,json"],
        ] {
            assert_eq!(check_kinds(&v(bad)), two, "{bad:?}");
        }
        for good in [
            &[][..],
            &["human"],
            &["short"],
            &["json"],
            &["json,json-diagnostic-short", "json-diagnostic-rendered-ansi"],
            &["json-render-diagnostics,json-diagnostic-short"],
        ] {
            assert_eq!(check_kinds(&v(good)), Ok(()), "{good:?}");
        }
    }

    /// A real diagnostic of the device pass (rustc 1.101-nightly for
    /// nvptx64-nvidia-cuda, `--error-format=json` through cargo).
    fn device_error() -> Value {
        serde_json::json!({
            "$message_type": "diagnostic",
            "message": "cannot find function `twice` in this scope",
            "code": {"code": "E0425", "explanation": null},
            "level": "error",
            "spans": [{"file_name": "src/main.rs", "byte_start": 97, "byte_end": 102, "line_start": 4,
                       "line_end": 4, "column_start": 15, "column_end": 20, "is_primary": true,
                       "text": [], "label": "not found in this scope", "suggested_replacement": null,
                       "suggestion_applicability": null, "expansion": null}],
            "children": [],
            "rendered": "error[E0425]: cannot find function `twice` in this scope\n --> src/main.rs:4:15\n  |\n4 |         *yi = twice(*yi);\n  |               ^^^^^ not found in this scope\n\n"
        })
    }

    /// What rust-analyzer shows for a diagnostic (`map_rust_diagnostic_to_lsp`):
    /// the message with each spanless child's message on a line of its own,
    /// at the primary span (file:line:col, 1-based here).
    fn rust_analyzer_view(d: &Value) -> (String, String) {
        let mut message = d["message"].as_str().unwrap().to_string();
        for c in d["children"].as_array().unwrap() {
            if c["spans"].as_array().unwrap().iter().all(|s| s["is_primary"] != true) {
                message.push('\n');
                message.push_str(c["message"].as_str().unwrap());
            }
        }
        let sp = d["spans"].as_array().unwrap().iter().find(|s| s["is_primary"] == true).unwrap();
        (format!("{}:{}:{}", sp["file_name"].as_str().unwrap(), sp["line_start"], sp["column_start"]), message)
    }

    #[test]
    fn device_diagnostics_are_marked_and_keep_their_span() {
        let mut d = device_error();
        let before = key(&d);
        assert_eq!(before, "error|cannot find function `twice` in this scope|src/main.rs:4:15");
        mark_device(&mut d, &device_note("nvptx64-nvidia-cuda", "sm_90"));
        assert_eq!(key(&d), before, "the key ignores the note: the host pass's twin is recognized");
        assert_eq!(
            rust_analyzer_view(&d),
            (
                "src/main.rs:4:15".to_string(),
                "cannot find function `twice` in this scope\nin the device pass for nvptx64-nvidia-cuda sm_90"
                    .to_string()
            )
        );
        assert_eq!(
            d["rendered"],
            "error[E0425]: cannot find function `twice` in this scope\n --> src/main.rs:4:15\n  |\n4 |         \
             *yi = twice(*yi);\n  |               ^^^^^ not found in this scope\n  = note: in the device pass for \
             nvptx64-nvidia-cuda sm_90\n\n"
        );
        // Still a record cargo_metadata (as rust-analyzer's flycheck) reads.
        let record = serde_json::json!({"reason": "compiler-message", "package_id": "path+file:///t/a#0.1.0",
            "manifest_path": "/t/a/Cargo.toml", "target": {"kind": ["bin"], "crate_types": ["bin"], "name": "a",
            "src_path": "/t/a/src/main.rs", "edition": "2021", "doc": true, "doctest": false, "test": true},
            "message": d});
        let parsed: cargo_metadata::Message = serde_json::from_value(record).unwrap();
        let cargo_metadata::Message::CompilerMessage(m) = parsed else { panic!("{parsed:?}") };
        assert_eq!(m.message.children.last().unwrap().message, "in the device pass for nvptx64-nvidia-cuda sm_90");
    }

    #[test]
    fn notes_follow_the_gutter() {
        assert_eq!(with_line("error: x\n   |\n", "note", "n"), "error: x\n   |\n   = note: n\n");
        assert_eq!(with_line("e\n10 |    ^^^^^\n\n", "note", "n"), "e\n10 |    ^^^^^\n   = note: n\n\n");
        assert_eq!(with_line("warning: y\n", "note", "n"), "warning: y\n  = note: n\n");
        // After rustc's own `= note:` (a kernel calling a kernel, gutter of 4).
        let e =
            "error[E0277]: k\n   --> src/main.rs:26:10\n    |\n  6 | #[kernel]\n    = note: this error originates\n\n";
        assert_eq!(
            with_line(e, "note", "n"),
            "error[E0277]: k\n   --> src/main.rs:26:10\n    |\n  6 | #[kernel]\n    = note: this error originates\n    = note: n\n\n"
        );
        assert_eq!(with_line("src/main.rs:4:15: error: x", "help", "n"), "src/main.rs:4:15: error: x\n  = help: n\n");
        assert_eq!(
            with_line("e\n\x1b[1m\x1b[94m  |\x1b[0m\n\n", "note", "n"),
            "e\n\x1b[1m\x1b[94m  |\x1b[0m\n  = note: n\n\n"
        );
    }

    #[test]
    fn the_host_pass_is_relayed_and_remembered() {
        let error = serde_json::json!({"reason": "compiler-message", "message": device_error()}).to_string();
        let finished = r#"{"reason":"build-finished","success":false}"#;
        let input = format!("{error}\nnot json\n{finished}\n");
        let seen = relay_host(input.as_bytes(), &MessageFormat::from_values(&v(&["json"])));
        assert_eq!(seen.errors, 1);
        assert!(seen.keys.contains("error|cannot find function `twice` in this scope|src/main.rs:4:15"));
    }
}
