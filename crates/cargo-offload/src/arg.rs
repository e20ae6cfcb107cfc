//! rustc's command line as cargo hands it to the wrapper, with the queries
//! the wrapper phases ask of it (cargo-miri's `arg.rs` is the model).
//!
//! Every query looks only at the arguments before `--`: what follows `--`
//! belongs to no flag of rustc's (a `--cfg` after it is not a cfg), so it
//! never answers a query and is passed on unchanged.

use std::path::{Path, PathBuf};

/// rustc's arguments (without the program), as the wrapper received them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    args: Vec<String>,
}

/// Flags of rustc that take their value as the next argument (when not
/// written `--flag=value`): the positional source file is none of them.
const VALUE_FLAGS: &[&str] = &[
    "--crate-name",
    "--crate-type",
    "--edition",
    "--emit",
    "--out-dir",
    "-o",
    "--target",
    "-L",
    "-l",
    "--extern",
    "--cfg",
    "--check-cfg",
    "-C",
    "--codegen",
    "-Z",
    "--cap-lints",
    "--error-format",
    "--json",
    "-W",
    "-A",
    "-D",
    "-F",
    "--warn",
    "--allow",
    "--deny",
    "--forbid",
    "--remap-path-prefix",
    "--explain",
    "--diagnostic-width",
    "--color",
    "--print",
    "--sysroot",
];

impl Args {
    pub fn new(args: Vec<String>) -> Self {
        Args { args }
    }

    pub fn as_slice(&self) -> &[String] {
        &self.args
    }

    /// The arguments before `--`.
    fn flags(&self) -> &[String] {
        let end = self.args.iter().position(|a| a == "--").unwrap_or(self.args.len());
        &self.args[..end]
    }

    /// Whether `name` is present (exactly) before `--`.
    pub fn has_flag(&self, name: &str) -> bool {
        self.flags().iter().any(|a| a == name)
    }

    /// Every value of `name`, given as `name value` or `name=value`, before `--`.
    pub fn flag_values<'a>(&'a self, name: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        let mut it = self.flags().iter();
        while let Some(a) = it.next() {
            if a == name {
                if let Some(v) = it.next() {
                    out.push(v.as_str());
                }
            } else if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                out.push(v);
            }
        }
        out
    }

    /// The first value of `name` (see [`Args::flag_values`]).
    pub fn flag_value(&self, name: &str) -> Option<&str> {
        self.flag_values(name).into_iter().next()
    }

    /// Every value of codegen option `key` (`-C key=v`, `-Ckey=v`,
    /// `--codegen key=v`, `--codegen=key=v`), in order.
    pub fn codegen_values(&self, key: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut it = self.flags().iter();
        while let Some(a) = it.next() {
            let opt = match a.as_str() {
                "-C" | "--codegen" => it.next().map(String::as_str),
                other => other.strip_prefix("-C").or_else(|| other.strip_prefix("--codegen=")),
            };
            if let Some(v) = opt.and_then(|o| o.strip_prefix(key)).and_then(|r| r.strip_prefix('=')) {
                out.push(v);
            }
        }
        out
    }

    /// The first value of codegen option `key` (see [`Args::codegen_values`]).
    pub fn codegen(&self, key: &str) -> Option<&str> {
        self.codegen_values(key).into_iter().next()
    }

    pub fn crate_name(&self) -> Option<&str> {
        self.flag_value("--crate-name")
    }

    /// The crate types (`--crate-type bin,lib` is two); none means rustc's
    /// default, `bin`.
    pub fn crate_types(&self) -> Vec<&str> {
        self.flag_values("--crate-type").into_iter().flat_map(|t| t.split(',')).collect()
    }

    /// `--test`: a test harness build.
    pub fn is_test(&self) -> bool {
        self.has_flag("--test")
    }

    /// Whether rustc builds an executable: `--crate-type bin`, or no crate
    /// type and no `--test` (rustc's default, which is how cargo builds a
    /// bench or test with `harness = false`).
    pub fn is_bin(&self) -> bool {
        let types = self.crate_types();
        types.contains(&"bin") || (types.is_empty() && !self.is_test())
    }

    /// A final crate: an executable or a test harness.
    pub fn is_final(&self) -> bool {
        self.is_bin() || self.is_test()
    }

    /// cargo's probes, passed through untouched: `--print …`, `-vV`, `-V`,
    /// `--version`, or a crate read from stdin (`-`).
    pub fn is_query(&self) -> bool {
        self.flags().iter().any(|a| a.starts_with("--print") || a == "-vV" || a == "-V" || a == "--version" || a == "-")
    }

    /// The crate root source file: the first positional `.rs` argument.
    pub fn source_file(&self) -> Option<&str> {
        self.source_index().map(|i| self.args[i].as_str())
    }

    /// The position of [`Args::source_file`] in the arguments.
    pub fn source_index(&self) -> Option<usize> {
        let mut it = self.flags().iter().enumerate();
        while let Some((i, a)) = it.next() {
            if VALUE_FLAGS.contains(&a.as_str()) {
                it.next();
            } else if !a.starts_with('-') && a.ends_with(".rs") {
                return Some(i);
            }
        }
        None
    }

    /// The names of the crates `--extern` names (`force:offload=/t/liboffload.rlib` is `offload`).
    pub fn extern_names(&self) -> Vec<&str> {
        self.flag_values("--extern")
            .into_iter()
            .map(|e| e.split_once('=').map_or(e, |(n, _)| n))
            .map(|n| n.rsplit_once(':').map_or(n, |(_, n)| n))
            .collect()
    }

    /// Compiling for a GPU: `--target` is a GPU triple, or the path of the
    /// target specification `cargo offload` writes for AMD GPUs.
    pub fn is_gpu_target(&self) -> bool {
        self.flag_value("--target").is_some_and(|t| {
            let name = Path::new(t).file_name().and_then(|n| n.to_str()).unwrap_or(t);
            name.starts_with("nvptx") || name.starts_with("amdgcn")
        })
    }

    /// `-C extra-filename`, or empty.
    fn extra_filename(&self) -> &str {
        self.codegen("extra-filename").unwrap_or("")
    }

    /// The dep-info file rustc writes (`<out-dir>/<name><extra>.d`), if
    /// `--emit` asks for one.
    pub fn dep_info_path(&self) -> Option<PathBuf> {
        let emits = self.flag_values("--emit");
        if !emits.iter().any(|e| e.split(',').any(|k| k.starts_with("dep-info"))) {
            return None;
        }
        let (dir, name) = (self.flag_value("--out-dir")?, self.crate_name()?);
        Some(Path::new(dir).join(format!("{name}{}.d", self.extra_filename())))
    }

    /// The executable rustc writes for a final crate: `<out-dir>/<name><extra>`.
    pub fn output_path(&self) -> Option<PathBuf> {
        let (dir, name) = (self.flag_value("--out-dir")?, self.crate_name()?);
        Some(Path::new(dir).join(format!("{name}{}{}", self.extra_filename(), std::env::consts::EXE_SUFFIX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Args {
        Args::new(s.split_whitespace().map(String::from).collect())
    }

    /// (argv, flag, its values): both spellings, repeats, and nothing after `--`.
    #[test]
    fn flag_values_stop_at_double_dash() {
        let table: &[(&str, &str, &[&str])] = &[
            ("--crate-name s --edition=2021 src/main.rs", "--crate-name", &["s"]),
            ("--crate-name=s src/main.rs", "--crate-name", &["s"]),
            ("--cfg a --cfg=b --cfg c", "--cfg", &["a", "b", "c"]),
            ("--cfg a -- --cfg b", "--cfg", &["a"]),
            ("-- --crate-type bin", "--crate-type", &[]),
            ("--emit dep-info,link --emit=metadata", "--emit", &["dep-info,link", "metadata"]),
            ("--crate-typex bin --crate-type", "--crate-type", &[]),
            ("--cfg", "--cfg", &[]),
        ];
        for (argv, flag, want) in table {
            assert_eq!(a(argv).flag_values(flag), *want, "{argv} / {flag}");
        }
        assert!(a("--test src/lib.rs").is_test());
        assert!(!a("src/lib.rs -- --test").is_test());
    }

    /// (argv, is_bin, is_test, is_final)
    #[test]
    fn crate_kinds() {
        let table: &[(&str, bool, bool, bool)] = &[
            ("--crate-name s src/main.rs --crate-type bin", true, false, true),
            ("--crate-name s src/lib.rs --crate-type lib", false, false, false),
            ("--crate-name s src/lib.rs --crate-type=rlib,bin", true, false, true),
            ("--crate-name s src/main.rs --test", false, true, true),
            // `harness = false`: no crate type is rustc's default, bin.
            ("--crate-name b benches/b.rs --cfg test", true, false, true),
            ("--crate-name s src/lib.rs --crate-type lib -- --test", false, false, false),
        ];
        for (argv, bin, test, fin) in table {
            let x = a(argv);
            assert_eq!((x.is_bin(), x.is_test(), x.is_final()), (*bin, *test, *fin), "{argv}");
        }
    }

    #[test]
    fn probes_pass_through() {
        let table: &[(&str, bool)] = &[
            ("- --crate-name ___ --print=file-names --crate-type bin", true),
            ("-vV", true),
            ("--print sysroot", true),
            ("--crate-name a src/main.rs --crate-type bin", false),
            ("--crate-name a src/main.rs -- -vV", false),
        ];
        for (argv, query) in table {
            assert_eq!(a(argv).is_query(), *query, "{argv}");
        }
    }

    /// (argv, root source file)
    #[test]
    fn finds_the_source_file() {
        let table: &[(&str, Option<&str>)] = &[
            ("--crate-name foo --edition=2021 src/main.rs --error-format=json --crate-type bin", Some("src/main.rs")),
            ("--cfg a.rs --crate-name b", None),
            ("--cfg x.rs -C opt-level=3 lib.rs", Some("lib.rs")),
            ("--crate-name b -- b.rs", None),
        ];
        for (argv, src) in table {
            assert_eq!(a(argv).source_file(), *src, "{argv}");
        }
        assert_eq!(a("--crate-name s --edition 2021 src/lib.rs").source_index(), Some(4));
    }

    #[test]
    fn extern_names() {
        let x = a("--extern offload=/t/liboffload.rlib --extern=force:a=/t/a.rlib --extern noprelude,force:core=/c --extern b");
        assert_eq!(x.extern_names(), ["offload", "a", "core", "b"]);
    }

    #[test]
    fn targets_and_outputs() {
        assert!(a("--crate-name s --target nvptx64-nvidia-cuda").is_gpu_target());
        assert!(a("--target=/t/offload/amdgcn-amd-amdhsa.json").is_gpu_target());
        assert!(!a("--crate-name build_script_build build.rs --crate-type bin").is_gpu_target());
        assert!(!a("--target x86_64-unknown-linux-gnu").is_gpu_target());
        let x = a("--crate-name s src/main.rs --emit=dep-info,link -C extra-filename=-abc --out-dir /t/deps");
        assert_eq!(x.dep_info_path(), Some(PathBuf::from("/t/deps/s-abc.d")));
        assert_eq!(x.output_path(), Some(PathBuf::from(format!("/t/deps/s-abc{}", std::env::consts::EXE_SUFFIX))));
        assert_eq!(
            a("--crate-name s -Cextra-filename=-x --out-dir /t --emit dep-info").dep_info_path(),
            Some("/t/s-x.d".into())
        );
        assert_eq!(a("--crate-name s --emit=link --out-dir /t").dep_info_path(), None);
        assert_eq!(a("--codegen extra-filename=-y").codegen("extra-filename"), Some("-y"));
        assert_eq!(a("-C opt-level=3 -- -C extra-filename=-z").codegen("extra-filename"), None);
        assert_eq!(
            a("-C target-feature=+ptx80 -Ctarget-feature=-sm_90 --codegen=target-feature=+a --codegen target-cpu=x")
                .codegen_values("target-feature"),
            ["+ptx80", "-sm_90", "+a"]
        );
    }
}
