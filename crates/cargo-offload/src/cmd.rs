//! The commands `cargo offload` runs, as data: program, arguments and each
//! environment change with its reason (rust-gpu's `cargo_cmd.rs` is the
//! model), so that `-v` and `--dry-run` print exactly what runs.

use std::path::PathBuf;
use std::process::Command;

/// One environment change of a command, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvChange {
    pub key: String,
    /// `None` removes the variable.
    pub value: Option<String>,
    pub why: &'static str,
}

impl EnvChange {
    pub fn set(key: &str, value: impl Into<String>, why: &'static str) -> Self {
        EnvChange { key: key.into(), value: Some(value.into()), why }
    }
}

/// A command to run: `program args…` with `env` applied to the inherited
/// environment.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<EnvChange>,
}

impl CommandSpec {
    /// The command, ready to spawn.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        for c in &self.env {
            match &c.value {
                Some(v) => cmd.env(&c.key, v),
                None => cmd.env_remove(&c.key),
            };
        }
        cmd
    }

    /// The command as `-v` and `--dry-run` print it: one line per
    /// environment change (`  KEY=value    # reason`, `  unset KEY    #
    /// reason`; `CARGO_ENCODED_RUSTFLAGS` quoted with its separators as
    /// `\x1f`), then `  program args…`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for c in &self.env {
            match &c.value {
                Some(v) if c.key == "CARGO_ENCODED_RUSTFLAGS" => {
                    s.push_str(&format!("  {}='{}'    # {}\n", c.key, v.replace('\x1f', "\\x1f"), c.why))
                }
                Some(v) => s.push_str(&format!("  {}={}    # {}\n", c.key, v, c.why)),
                None => s.push_str(&format!("  unset {}    # {}\n", c.key, c.why)),
            }
        }
        s.push_str(&format!("  {} {}", self.program.display(), self.args.join(" ")));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_as_run() {
        let spec = CommandSpec {
            program: "/bin/cargo".into(),
            args: vec!["build".into(), "--release".into()],
            env: vec![
                EnvChange::set("CARGO_ENCODED_RUSTFLAGS", "--cfg\x1fx", "device flags"),
                EnvChange { key: "RUSTFLAGS".into(), value: None, why: "host flags" },
                EnvChange::set("A", "1", "why"),
            ],
        };
        assert_eq!(
            spec.render(),
            "  CARGO_ENCODED_RUSTFLAGS='--cfg\\x1fx'    # device flags\n  unset RUSTFLAGS    # host flags\n  \
             A=1    # why\n  /bin/cargo build --release"
        );
        let cmd = spec.command();
        let envs: Vec<_> = cmd.get_envs().map(|(k, v)| (k.to_string_lossy().into_owned(), v.is_some())).collect();
        assert!(envs.contains(&("RUSTFLAGS".into(), false)) && envs.contains(&("A".into(), true)), "{envs:?}");
        assert_eq!(cmd.get_args().count(), 2);
    }
}
