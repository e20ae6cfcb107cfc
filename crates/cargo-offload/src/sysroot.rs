//! The device sysroot: `core` and `compiler_builtins` compiled once per
//! device toolchain, target, target CPU and target features, and shared by
//! every project and build that needs the same (xargo's and
//! `cargo-xbuild`'s model; rustup ships the same shape for the targets it
//! precompiles).
//!
//! The device pass then gives rustc `--sysroot <dir>` instead of cargo
//! `-Zbuild-std=core`, which compiled `core` again for every target
//! directory, profile and set of device flags (about 30 s of CPU each).
//!
//! The libraries are compiled like a precompiled standard library:
//! cargo's `release` profile (optimized, no debug assertions, no overflow
//! checks), no debug info (`-Cdebuginfo=0`, as the device pass), the
//! target's panic strategy (`abort` for both GPU targets, like the device
//! pass's crates), with exactly the target CPU and target features of the
//! device pass: LLVM inlines a function only into a caller with the same
//! `target-cpu` and `target-features` attributes (`TargetTransformInfo::
//! areInlineCompatible`), so `core` built for another CPU would not be
//! inlined into kernels. Their objects are LLVM bitcode (`obj-is-bitcode`
//! targets), which `offload-linker` links with the kernels. Other device
//! flags (`OFFLOAD_DEVICE_RUSTFLAGS`' `-Copt-level`, `--emit`, …) and the
//! device pass's `--cfg`s do not reach `core`, as with any precompiled
//! standard library; `OFFLOAD_BUILD_STD=1` switches back to
//! `-Zbuild-std=core`, which compiles `core` with all of them.
//!
//! Layout: `<cache>/sysroot/<target>-<cpu>-<key>/lib/rustlib/<target>/lib/`
//! with the `.rlib`s, and `offload-sysroot.txt` saying what it was built
//! from. `<cache>` is `OFFLOAD_CACHE_DIR`, else `$XDG_CACHE_HOME/offload`,
//! else `~/.cache/offload`. `<key>` hashes everything the libraries depend
//! on: the recipe, the device rustc (path and `rustc -V`) and cargo, the
//! identity of the library sources (rust-src), the target (the target
//! specification's text for AMD GPUs), CPU and features. A new toolchain
//! gets a new directory; old ones go when the cache is over its size limit
//! (`cache_gc`, least recently used first) or with `cargo offload clean
//! --cache`.
//!
//! Concurrent builds: one builder per key holds `<dir>.lock` (`flock`)
//! exclusively; the libraries are assembled in a temporary directory
//! renamed into place, so a reader never sees a partial sysroot and an
//! interrupted build leaves nothing a later one would trust. A device pass
//! holds the lock shared while it runs ([`Sysroot::ensure`]), so that
//! pruning never removes a sysroot a rustc is reading.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cache_gc::How;
use crate::errors::{CliError, Result};
use crate::status;
use crate::toolchain::DeviceToolchain;

/// What a sysroot was built from; its modification time is its last use
/// (`cache_gc`).
const INFO: &str = "offload-sysroot.txt";

/// A sysroot in use: its lock, held shared (see [`Sysroot::ensure`]).
#[must_use = "the sysroot is only protected from pruning while this is held"]
pub struct InUse(#[allow(dead_code)] nix::fcntl::Flock<File>);

/// Switches the device pass back to `-Zbuild-std=core` when set to `1`.
pub const BUILD_STD_VAR: &str = "OFFLOAD_BUILD_STD";

/// Version of the recipe below: part of the key, so that a change to how
/// the libraries are built never reuses a sysroot built the old way.
const RECIPE: &str = "offload-sysroot 1: release, -Cdebuginfo=0, -Zbuild-std=core";

/// Whether the device pass compiles `core` itself (`OFFLOAD_BUILD_STD=1`).
pub fn build_std() -> bool {
    std::env::var(BUILD_STD_VAR).is_ok_and(|v| v == "1")
}

/// The cache directory (`OFFLOAD_CACHE_DIR`, else the user's): sysroots
/// are `<cache>/sysroot/…`.
pub use offload_image::probe::cache_root;

/// The target CPU and target features that `flags` (rustc flags, in
/// order) set: `-Ctarget-cpu=…` (the last one wins, as in rustc) and every
/// `-Ctarget-feature=…` list, in either `-Cx=y` or `-C x=y` form.
pub fn codegen_target(flags: &[String]) -> (Option<String>, Vec<String>) {
    let mut cpu = None;
    let mut features = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        let c = match f.strip_prefix("-C") {
            Some("") => it.next().map(String::as_str).unwrap_or(""),
            Some(rest) => rest,
            None => match f.strip_prefix("--codegen") {
                Some("") => it.next().map(String::as_str).unwrap_or(""),
                Some(rest) => rest.strip_prefix('=').unwrap_or(rest),
                None => continue,
            },
        };
        if let Some(v) = c.strip_prefix("target-cpu=") {
            cpu = Some(v.to_string());
        } else if let Some(v) = c.strip_prefix("target-feature=") {
            features.extend(v.split(',').filter(|x| !x.is_empty()).map(String::from));
        }
    }
    (cpu, features)
}

/// One device sysroot: what it is built for and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysroot {
    /// What `--sysroot` names: `<cache>/sysroot/<target>-<cpu>-<key>`.
    pub dir: PathBuf,
    /// The directory name below `lib/rustlib`: the triple, or for a target
    /// specification file its file stem (rustc's `TargetTuple::tuple`).
    pub target_name: String,
    /// What cargo gets as `--target` (a triple or a `.json` path).
    pub target_arg: String,
    pub cpu: String,
    /// Target features, in the device pass's order (`+ptx78`, …).
    pub features: Vec<String>,
    rustc: PathBuf,
    cargo: PathBuf,
    /// A few lines saying what the key covers, for `offload-sysroot.txt`.
    description: String,
}

/// The identity of the library sources: their path, and the size and
/// modification time of `library/Cargo.lock` and `core/src/lib.rs`
/// (a new rust-src replaces both).
fn rust_src_identity(sysroot: &Path) -> String {
    let lib = sysroot.join("lib/rustlib/src/rust/library");
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    let mut s = lib.display().to_string();
    for f in ["Cargo.lock", "core/src/lib.rs"] {
        match std::fs::metadata(lib.join(f)) {
            Ok(m) => {
                let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                s.push_str(&format!(" {f}:{}:{}", m.len(), mtime.map_or(0, |d| d.as_nanos())));
            }
            Err(_) => s.push_str(&format!(" {f}:-")),
        }
    }
    s
}

/// Size and modification time of an executable: a new install changes them.
pub use offload_image::file::identity as file_identity;

impl Sysroot {
    /// The sysroot for `target_arg` (a triple, or the path of a target
    /// specification), `cpu` and `features`, below `cache` (see
    /// [`cache_root`]); nothing is built yet (see [`Sysroot::ensure`]).
    pub fn new(tc: &DeviceToolchain, target_arg: &str, cpu: &str, features: &[String], cache: &Path) -> Sysroot {
        let target_name = if target_arg.ends_with(".json") {
            Path::new(target_arg).file_stem().and_then(|s| s.to_str()).unwrap_or(target_arg).to_string()
        } else {
            target_arg.to_string()
        };
        let target_id = if target_arg.ends_with(".json") {
            // The specification's text, not its path: every project writes
            // its own copy of the same specification.
            let text = std::fs::read(target_arg).unwrap_or_default();
            format!("{target_name} (specification {:016x})", offload_image::hash::fnv64(&text))
        } else {
            target_name.clone()
        };
        let description = format!(
            "{RECIPE}\nrustc: {} ({})\ncargo: {}\nrust-src: {}\ntarget: {target_id}\ntarget-cpu: {cpu}\ntarget-features: {}\n",
            tc.rustc.display(),
            tc.version,
            file_identity(&tc.cargo),
            rust_src_identity(&tc.sysroot),
            features.join(","),
        );
        let key = offload_image::hash::fnv64(format!("{description}{}", file_identity(&tc.rustc)).as_bytes());
        let dir = cache.join("sysroot").join(format!("{target_name}-{cpu}-{key:016x}"));
        Sysroot {
            dir,
            target_name,
            target_arg: target_arg.to_string(),
            cpu: cpu.to_string(),
            features: features.to_vec(),
            rustc: tc.rustc.clone(),
            cargo: tc.cargo.clone(),
            description,
        }
    }

    /// `<dir>/lib/rustlib/<target>/lib`, where the `.rlib`s are.
    pub fn lib_dir(&self) -> PathBuf {
        lib_dir_in(&self.dir, &self.target_name)
    }

    /// Whether the sysroot is complete (it only ever appears complete) and
    /// intact: every library [`INFO`] lists (`rlib <name> <bytes>`) still
    /// has its size, so that a library cut short since (a full disk, a hand
    /// edit) is built again instead of failing every device pass with
    /// rustc's "invalid metadata". Sysroots of older versions list none.
    pub fn is_built(&self) -> bool {
        let Ok(info) = std::fs::read_to_string(self.dir.join(INFO)) else { return false };
        let lib = self.lib_dir();
        let intact = |l: &str| {
            let mut w = l.split(' ').skip(1);
            let (Some(name), Some(n)) = (w.next(), w.next()) else { return false };
            std::fs::metadata(lib.join(name)).is_ok_and(|m| Some(m.len()) == n.parse().ok())
        };
        lib.is_dir() && info.lines().filter(|l| l.starts_with("rlib ")).all(intact)
    }

    /// The rustflags the libraries are compiled with.
    pub fn rustflags(&self) -> Vec<String> {
        let mut f = vec![format!("-Ctarget-cpu={}", self.cpu), "-Cdebuginfo=0".to_string()];
        if !self.features.is_empty() {
            f.push(format!("-Ctarget-feature={}", self.features.join(",")));
        }
        f
    }

    /// The cargo command that compiles the libraries, in `build` (a
    /// directory of this build's own, holding a placeholder crate).
    fn command(&self, build: &Path) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.args(["build", "--release", "--target", &self.target_arg]);
        if self.target_arg.ends_with(".json") {
            cmd.arg("-Zjson-target-spec");
        }
        cmd.args(["-Zbuild-std=core", "--message-format", "json", "--manifest-path"])
            .arg(build.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(build.join("target"))
            .current_dir(build)
            .env("RUSTC", &self.rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_ENCODED_RUSTFLAGS", self.rustflags().join("\x1f"))
            .env("CARGO_TERM_COLOR", "never")
            .env("CARGO_INCREMENTAL", "0");
        // Nothing of the user's build configuration reaches the libraries.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("CARGO_PROFILE_") || k.starts_with("CARGO_BUILD_") || k.starts_with("CARGO_TARGET_") {
                cmd.env_remove(&*k);
            }
        }
        for k in ["RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "__OFFLOAD_PHASE", "CARGO_MANIFEST_DIR"] {
            cmd.env_remove(k);
        }
        cmd
    }

    /// Builds the sysroot unless it is there; safe with other `cargo
    /// offload`s doing the same (see the module docs). Returns its lock,
    /// held shared: while the caller keeps it, the sysroot is in use and
    /// pruning the cache (`cache_gc`) leaves it alone.
    pub fn ensure(&self) -> Result<InUse> {
        loop {
            let shared = self.lock(How::Shared)?;
            if self.is_built() {
                crate::cache_gc::touch(&self.dir.join(INFO));
                return Ok(InUse(shared));
            }
            drop(shared);
            let _building = self.lock(How::Exclusive)?;
            if !self.is_built() {
                status::status(
                    "Compiling",
                    format!(
                        "core for {} {} (device sysroot, once per toolchain and target: {})",
                        self.target_name,
                        self.cpu,
                        self.dir.display()
                    ),
                );
                let build = self.dir.with_extension("build");
                let rlibs = self.compile(&build)?;
                self.install(&rlibs)?;
                let _ = std::fs::remove_dir_all(&build);
            }
            // Shared again (flock cannot turn an exclusive lock into a
            // shared one in one step): a pruning in between means one more
            // round.
        }
    }

    /// Takes `<dir>.lock` (`how`: shared or exclusive), waiting, with a
    /// note, while another build holds it exclusively.
    fn lock(&self, how: How) -> Result<nix::fcntl::Flock<File>> {
        let parent = self.dir.parent().expect("a sysroot has a parent directory");
        std::fs::create_dir_all(parent).map_err(CliError::io("could not create", parent))?;
        let lock_path = self.dir.with_extension("lock");
        let io = |e| CliError::io("could not lock", &lock_path)(e);
        let now = if how == How::Shared { How::TryShared } else { How::TryExclusive };
        if let Some(l) = crate::cache_gc::lock(&lock_path, now).map_err(io)? {
            return Ok(l);
        }
        status::note(format!(
            "waiting for another cargo offload to build the device sysroot for {} {}",
            self.target_name, self.cpu
        ));
        Ok(crate::cache_gc::lock(&lock_path, how).map_err(io)?.expect("a waiting lock is always taken"))
    }

    /// Compiles the libraries in `build` (a placeholder crate); returns
    /// their `.rlib`s and `.rmeta`s.
    fn compile(&self, build: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(build).map_err(CliError::io("could not create", build))?;
        let manifest = "[package]\nname = \"offload-sysroot\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
                        [lib]\npath = \"lib.rs\"\n\n\
                        [profile.release]\nopt-level = 3\ndebug = 0\ndebug-assertions = false\n\
                        overflow-checks = false\nincremental = false\n\n[workspace]\n";
        for (name, text) in [("Cargo.toml", manifest.as_bytes()), ("lib.rs", b"#![no_std]\n".as_slice())] {
            let path = build.join(name);
            offload_image::file::write_if_changed(&path, text).map_err(CliError::io("could not write", &path))?;
        }
        let mut running = crate::child::spawn(self.command(build).stdout(Stdio::piped()).stderr(Stdio::piped()))?;
        let stderr = running.child.stderr.take().expect("piped");
        let errors = std::thread::spawn(move || {
            use std::io::Read;
            let mut s = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut s);
            s
        });
        let mut rlibs = Vec::new();
        let mut rendered = Vec::new();
        for msg in cargo_metadata::Message::parse_stream(BufReader::new(running.child.stdout.take().expect("piped"))) {
            match msg {
                Ok(cargo_metadata::Message::CompilerArtifact(a))
                    if a.target.name.replace('-', "_") != "offload_sysroot" =>
                {
                    rlibs.extend(
                        a.filenames
                            .iter()
                            .filter(|f| matches!(f.extension(), Some("rlib" | "rmeta")))
                            .map(|f| f.clone().into_std_path_buf()),
                    );
                }
                Ok(cargo_metadata::Message::CompilerMessage(m))
                    if m.message.level == cargo_metadata::diagnostic::DiagnosticLevel::Error =>
                {
                    rendered.extend(m.message.rendered);
                }
                _ => {}
            }
        }
        let status = running.wait()?;
        let stderr = errors.join().unwrap_or_default();
        if crate::interrupt::interrupted() {
            return Err(CliError::Interrupted);
        }
        if status.success() && rlibs.iter().any(|r| r.extension().is_some_and(|e| e == "rlib")) {
            return Ok(rlibs);
        }
        let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim_start().starts_with("Compiling ")).collect();
        Err(CliError::DeviceBuild {
            what: format!(
                "compiling core for {} {} failed:\n{}{}",
                self.target_name,
                self.cpu,
                rendered.concat(),
                tail.join("\n")
            ),
            hints: vec![format!(
                "`OFFLOAD_BUILD_STD=1` compiles core inside the device pass instead (-Zbuild-std=core); \
                 the failed sysroot build is in {}",
                build.display()
            )],
        })
    }

    /// Puts `rlibs` in place: assembled beside the final directory, then
    /// renamed to it (under the lock nobody else renames to it).
    fn install(&self, rlibs: &[PathBuf]) -> Result<()> {
        let tmp = offload_image::file::unique_tmp(&self.dir);
        let lib = lib_dir_in(&tmp, &self.target_name);
        std::fs::create_dir_all(&lib).map_err(CliError::io("could not create", &lib))?;
        for r in rlibs {
            let to = lib.join(r.file_name().unwrap_or_default());
            if std::fs::hard_link(r, &to).is_err() {
                std::fs::copy(r, &to).map_err(CliError::io("could not write", &to))?;
            }
        }
        let mut text = self.description.clone();
        text.push_str(&format!("built by cargo-offload {}\n", env!("CARGO_PKG_VERSION")));
        for r in rlibs {
            let name = r.file_name().unwrap_or_default().to_string_lossy();
            let to = lib.join(&*name);
            let n = std::fs::metadata(&to).map_err(CliError::io("could not read", &to))?.len();
            text.push_str(&format!("rlib {name} {n}\n"));
        }
        let info = tmp.join(INFO);
        std::fs::write(&info, text).map_err(CliError::io("could not write", &info))?;
        // A leftover of a build that lost its lock file is replaced.
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::rename(&tmp, &self.dir).map_err(CliError::io("could not rename a directory to", &self.dir))
    }
}

fn lib_dir_in(dir: &Path, target_name: &str) -> PathBuf {
    dir.join("lib").join("rustlib").join(target_name).join("lib")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::DeviceToolchain;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn toolchain(dir: &Path, version: &str) -> DeviceToolchain {
        let src = dir.join("lib/rustlib/src/rust/library");
        std::fs::create_dir_all(src.join("core/src")).unwrap();
        std::fs::write(src.join("Cargo.lock"), "# lock").unwrap();
        std::fs::write(src.join("core/src/lib.rs"), "// core").unwrap();
        DeviceToolchain {
            rustc: dir.join("bin/rustc"),
            cargo: dir.join("bin/cargo"),
            sysroot: dir.to_path_buf(),
            version: version.into(),
            llvm_major: 22,
            llvm: offload_linker::LlvmTools {
                llvm_link: "llvm-link".into(),
                opt: "opt".into(),
                llc: "llc".into(),
                lld: None,
                major: 22,
            },
            ptxas: None,
            origin: "test".into(),
        }
    }

    #[test]
    fn the_device_flags_that_reach_core() {
        let (cpu, f) = codegen_target(&v(
            "-Copt-level=0 -Ctarget-cpu=sm_80 -C target-feature=+ptx80,+ptx81 --emit=llvm-ir -Ctarget-cpu=sm_90",
        ));
        assert_eq!(cpu.as_deref(), Some("sm_90"), "the last -Ctarget-cpu wins");
        assert_eq!(f, ["+ptx80", "+ptx81"]);
        let (cpu, f) = codegen_target(&v("--codegen target-feature=+a --codegen=target-feature=-b -Cdebuginfo=0"));
        assert_eq!((cpu, f), (None, vec!["+a".to_string(), "-b".to_string()]));
        assert_eq!(codegen_target(&[]), (None, vec![]));
    }

    /// The key covers the toolchain, the library sources, the target, the
    /// CPU and the features, and nothing else (not the project).
    #[test]
    fn one_sysroot_per_toolchain_target_cpu_and_features() {
        let base = std::env::temp_dir().join(format!("offload-sysroot-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let tc = toolchain(&base.join("tc"), "rustc 1.96.0 (ac68faa20 2026-05-25)");
        let cache = base.join("cache");
        let f78 = vec!["+ptx78".to_string()];
        let a = Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &f78, &cache);
        assert_eq!(a, Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &f78, &cache), "deterministic");
        assert!(a.dir.starts_with(cache.join("sysroot")));
        assert!(
            a.dir.file_name().unwrap().to_str().unwrap().starts_with("nvptx64-nvidia-cuda-sm_90-"),
            "{}",
            a.dir.display()
        );
        assert_eq!(a.lib_dir(), a.dir.join("lib/rustlib/nvptx64-nvidia-cuda/lib"));
        assert_eq!(a.rustflags(), ["-Ctarget-cpu=sm_90", "-Cdebuginfo=0", "-Ctarget-feature=+ptx78"]);
        let mut dirs = vec![a.dir.clone()];
        dirs.push(Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_80", &f78, &cache).dir);
        dirs.push(Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &["+ptx80".to_string()], &cache).dir);
        dirs.push(Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &[], &cache).dir);
        let nightly = DeviceToolchain { version: "rustc 1.101.0-nightly".into(), ..tc.clone() };
        dirs.push(Sysroot::new(&nightly, "nvptx64-nvidia-cuda", "sm_90", &f78, &cache).dir);
        // New library sources (a rust-src update) with the same rustc.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(base.join("tc/lib/rustlib/src/rust/library/Cargo.lock"), "# lock 2").unwrap();
        dirs.push(Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &f78, &cache).dir);
        // AMD: the target specification's text, wherever the file is.
        let (p1, p2) = (base.join("p1/amdgcn-amd-amdhsa.json"), base.join("p2/amdgcn-amd-amdhsa.json"));
        for p in [&p1, &p2] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "{\"llvm-target\": \"amdgcn-amd-amdhsa\"}").unwrap();
        }
        let amd = Sysroot::new(&tc, p1.to_str().unwrap(), "gfx942", &[], &cache);
        assert_eq!(
            amd.dir,
            Sysroot::new(&tc, p2.to_str().unwrap(), "gfx942", &[], &cache).dir,
            "same text, other project"
        );
        assert_eq!(amd.target_name, "amdgcn-amd-amdhsa");
        assert_eq!(amd.lib_dir(), amd.dir.join("lib/rustlib/amdgcn-amd-amdhsa/lib"));
        dirs.push(amd.dir.clone());
        std::fs::write(&p2, "{\"llvm-target\": \"amdgcn-amd-amdhsa\", \"x\": 1}").unwrap();
        dirs.push(Sysroot::new(&tc, p2.to_str().unwrap(), "gfx942", &[], &cache).dir);
        let n = dirs.len();
        dirs.sort();
        dirs.dedup();
        assert_eq!(dirs.len(), n, "every change is a new sysroot: {dirs:#?}");
        assert!(!a.is_built());
        let _ = std::fs::remove_dir_all(&base);
    }

    /// An installed sysroot whose `core` was cut short since is not built:
    /// the next device pass builds it again instead of failing in rustc.
    #[test]
    fn a_truncated_library_is_built_again() {
        let base = std::env::temp_dir().join(format!("offload-sysroot-cut-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let tc = toolchain(&base.join("tc"), "rustc 1.96.0 (ac68faa20 2026-05-25)");
        let s = Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &[], &base.join("cache"));
        let built = base.join("built");
        std::fs::create_dir_all(&built).unwrap();
        let rlibs = ["libcore-1.rlib", "libcompiler_builtins-2.rlib"].map(|n| built.join(n));
        for (i, r) in rlibs.iter().enumerate() {
            std::fs::write(r, vec![7u8; 1000 + i]).unwrap();
        }
        s.install(&rlibs).unwrap();
        assert!(s.is_built());
        let core = s.lib_dir().join("libcore-1.rlib");
        std::fs::OpenOptions::new().write(true).open(&core).unwrap().set_len(10).unwrap();
        assert!(!s.is_built(), "a cut libcore counts as built");
        std::fs::remove_file(&core).unwrap();
        assert!(!s.is_built(), "a missing libcore counts as built");
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A device pass holds its sysroot for as long as it runs: pruning the
    /// cache meanwhile keeps it, whatever the limit; once the pass ends it
    /// is an entry like any other. Using it records a use.
    #[test]
    fn a_sysroot_in_use_is_not_pruned() {
        let base = std::env::temp_dir().join(format!("offload-sysroot-in-use-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let tc = toolchain(&base.join("tc"), "rustc 1.96.0 (ac68faa20 2026-05-25)");
        let cache = base.join("cache");
        let s = Sysroot::new(&tc, "nvptx64-nvidia-cuda", "sm_90", &[], &cache);
        std::fs::create_dir_all(s.lib_dir()).unwrap();
        std::fs::write(s.lib_dir().join("libcore-1.rlib"), [1u8; 100]).unwrap();
        std::fs::write(s.dir.join(INFO), "built\n").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::OpenOptions::new().append(true).open(s.dir.join(INFO)).unwrap().set_modified(old).unwrap();
        let in_use = s.ensure().expect("built already: nothing to compile");
        let used = std::fs::metadata(s.dir.join(INFO)).unwrap().modified().unwrap();
        assert!(used > old + std::time::Duration::from_secs(3000), "a use is recorded");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let p = crate::cache_gc::prune(&cache, 0, later, false);
        assert_eq!((p.removed.len(), p.in_use), (0, 1));
        assert!(s.is_built());
        drop(in_use);
        assert_eq!(crate::cache_gc::prune(&cache, 0, later, false).removed, std::slice::from_ref(&s.dir));
        assert!(!s.is_built() && !s.dir.with_extension("lock").exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
