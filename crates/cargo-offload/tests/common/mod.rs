//! Helpers for the end-to-end tests: fixture copies, running the real
//! `cargo offload`, reading the images embedded in a host binary.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// One target directory for most fixtures, so dependencies build once.
pub fn shared_target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-target")
}

/// `OFFLOAD_REQUIRE_PTXAS=1` (CI): every build assembles cubins with
/// ptxas and the tests that check images require them.
pub fn require_ptxas() -> bool {
    std::env::var("OFFLOAD_REQUIRE_PTXAS").is_ok_and(|v| v == "1")
}

/// In the environment of a command: assemble cubins with ptxas (if it is
/// installed) even without `OFFLOAD_REQUIRE_PTXAS=1`. Otherwise the tests'
/// builds skip ptxas (`OFFLOAD_PTXAS=`), whose cubins only CI checks.
pub const WITH_PTXAS: (&str, &str) = ("OFFLOAD_TEST_PTXAS", "1");

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn assert_success(&self) {
        assert_eq!(self.code, 0, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr);
    }
}

/// Runs `cmd`. With `OFFLOAD_TEST_TIMES=<file>`, under `/usr/bin/time`,
/// which appends the command's wall and CPU seconds (its children's
/// included) with the test's name to that file: where a run's time goes.
fn output(cmd: &mut Command) -> Output {
    let out = match std::env::var_os("OFFLOAD_TEST_TIMES") {
        Some(log) => {
            let program = Path::new(cmd.get_program()).file_name().unwrap_or_default().to_string_lossy().into_owned();
            let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
            let dir = cmd.get_current_dir().and_then(|d| d.file_name()).map(|d| d.to_string_lossy().into_owned());
            let test = std::thread::current().name().unwrap_or("?").to_string();
            let label = format!("{test} [{}] {program} {}", dir.unwrap_or_default(), args.join(" "));
            let mut t = Command::new("/usr/bin/time");
            t.arg("-a").arg("-o").arg(&log).arg("-f").arg(format!("%e %U %S {}", label.replace('%', "%%")));
            t.arg(cmd.get_program()).args(cmd.get_args());
            for (k, v) in cmd.get_envs() {
                match v {
                    Some(v) => t.env(k, v),
                    None => t.env_remove(k),
                };
            }
            if let Some(d) = cmd.get_current_dir() {
                t.current_dir(d);
            }
            t.output().expect("spawn /usr/bin/time")
        }
        None => cmd.output().expect("spawn"),
    };
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// `cargo offload <args>` in `dir`, as cargo would run the subcommand.
pub fn offload_cmd(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-offload"));
    cmd.arg("offload").args(args).current_dir(dir).env("CARGO", cargo()).env("CARGO_TERM_COLOR", "never");
    for k in [
        "__OFFLOAD_PHASE",
        "__OFFLOAD_IMAGE_MAP",
        "__OFFLOAD_INNER_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "OFFLOAD_DEVICE",
    ] {
        cmd.env_remove(k);
    }
    cmd.env(CACHE_VAR, cache_dir());
    // The tests share one cache bigger than the default limit: never
    // pruned mid-run under a test that counts on what another stored
    // (`tests/cache.rs` tests the pruning, with caches of its own).
    cmd.env("OFFLOAD_CACHE_SIZE", "1T");
    if !require_ptxas() && !env.contains(&WITH_PTXAS) {
        cmd.env("OFFLOAD_PTXAS", "");
    }
    cmd.envs(env.iter().copied());
    output(&mut cmd)
}

/// `OFFLOAD_CACHE_DIR`: where `cargo offload` keeps its device sysroots.
pub const CACHE_VAR: &str = "OFFLOAD_CACHE_DIR";

/// The tests' own cache directory (device sysroots), shared by all of them
/// and removed with the target directory: a cold `cargo test` builds each
/// sysroot it needs once.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("offload-cache")
}

/// The fixture copies of this process, to catch two tests sharing one.
static COPIES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A copy of a fixture crate under `target/tmp/fixtures/`, building into
/// [`shared_target_dir`].
pub struct Fixture {
    pub dir: PathBuf,
    target: PathBuf,
    /// The crate name of the root package (`fixture_bin_only_exports`;
    /// empty for a virtual workspace).
    pub name: String,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else if e.file_name() == "Cargo.toml" {
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(&dest, text.replace("@OFFLOAD@", repo_root().join("crates/offload").to_str().unwrap()))
                .unwrap();
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Runs `build` once per `key` in this process and hands every caller its
/// result: for builds several tests read (a configuration of a fixture or
/// an example), so that each is built once, and tests that need the same
/// one wait for it instead of building it again.
pub fn built_once(key: &str, build: impl FnOnce() -> Output) -> std::sync::Arc<Output> {
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock};
    static BUILDS: Mutex<Option<HashMap<String, Arc<OnceLock<Arc<Output>>>>>> = Mutex::new(None);
    let cell = BUILDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .entry(key.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| Arc::new(build())).clone()
}

impl Fixture {
    /// A copy of `tests/fixtures/<name>`, for a fixture one test builds.
    pub fn new(name: &str) -> Self {
        Self::copy(name, name, None)
    }

    /// A copy of `tests/fixtures/<name>` whose root package is renamed
    /// `<package>_<tag>`: its binaries, images and kernel symbols are its
    /// own, so tests building the same fixture in the shared target
    /// directory (where cargo puts final binaries by name) neither overwrite
    /// each other's nor take turns.
    pub fn renamed(name: &str, tag: &str) -> Self {
        Self::copy(name, &format!("{name}-{tag}"), Some(tag))
    }

    fn copy(name: &str, copy: &str, tag: Option<&str>) -> Self {
        let fresh =
            COPIES.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashSet::new).insert(copy.into());
        assert!(fresh, "two tests use the fixture copy `{copy}`: give one a tag of its own (Fixture::renamed)");
        // A fresh copy (state such as instantiation lists is per workspace
        // root); what it depends on is built once in the shared target.
        let dir =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures").join(format!("{copy}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures").join(name), &dir);
        let offload = repo_root().join("crates/offload");
        let manifest = dir.join("Cargo.toml");
        let mut text = std::fs::read_to_string(repo_root().join("tests/fixtures").join(name).join("Cargo.toml"))
            .unwrap()
            .replace("@OFFLOAD@", offload.to_str().unwrap());
        // The root package's name (a virtual workspace has none).
        let package =
            text.lines().find_map(|l| l.strip_prefix("name = \"").and_then(|n| n.strip_suffix('"'))).map(String::from);
        let package = match (tag, package) {
            (Some(tag), Some(package)) => {
                let renamed = format!("{package}_{}", tag.replace('-', "_"));
                text = text.replacen(&format!("name = \"{package}\""), &format!("name = \"{renamed}\""), 1);
                renamed
            }
            (Some(_), None) => panic!("{name} has no root package to rename"),
            (None, package) => package.unwrap_or_default(),
        };
        // Its own workspace: the copy lives below this repository's.
        if !text.contains("[workspace]") {
            text += "\n[workspace]\n";
        }
        std::fs::write(&manifest, text).unwrap();
        // The workspace's versions of the dependencies, so that the
        // fixtures, the examples and the device passes of both share one
        // build of each in the shared target directory.
        if !dir.join("Cargo.lock").exists() {
            std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        }
        Fixture { dir, target: shared_target_dir(), name: package.replace('-', "_") }
    }

    pub fn target_dir(&self) -> &Path {
        &self.target
    }

    /// This copy builds into a target directory of its own (empty at
    /// first, as a new project's), not the shared one.
    pub fn own_target(mut self) -> Self {
        self.target = self.dir.join("target");
        self
    }

    pub fn offload(&self, args: &[&str]) -> Output {
        self.offload_env(args, &[])
    }

    pub fn offload_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut a: Vec<&str> = args.to_vec();
        let t = self.target.to_str().unwrap().to_string();
        a.push("--target-dir");
        a.push(&t);
        offload_cmd(&self.dir, &a, env)
    }

    /// Plain `cargo <args>` (no offload).
    pub fn cargo(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(cargo());
        cmd.args(args).arg("--target-dir").arg(&self.target).current_dir(&self.dir);
        for k in ["__OFFLOAD_PHASE", "__OFFLOAD_IMAGE_MAP", "RUSTC_WORKSPACE_WRAPPER"] {
            cmd.env_remove(k);
        }
        output(&mut cmd)
    }

    pub fn ptx(&self, arch: &str, profile: &str, bin: &str) -> String {
        let p = self.target.join(format!("offload/nvptx64-nvidia-cuda-{arch}/nvptx64-nvidia-cuda/{profile}/{bin}.ptx"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    pub fn host_exe(&self, profile: &str, bin: &str) -> PathBuf {
        self.target.join(profile).join(bin)
    }

    pub fn run_exe(&self, profile: &str, bin: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(self.host_exe(profile, bin));
        cmd.env_remove("OFFLOAD_DEVICE").envs(env.iter().copied());
        output(&mut cmd)
    }

    pub fn edit(&self, file: &str, f: impl FnOnce(String) -> String) {
        let p = self.dir.join(file);
        let s = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, f(s)).unwrap();
    }
}

/// The images in a host binary's `offload_images` section, as (kind, arch,
/// sorted kernel names).
pub fn embedded_images(exe: &Path) -> Vec<(String, String, Vec<String>)> {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(exe).unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    let file = object::File::parse(&*bytes).unwrap();
    let Some(sec) = file.section_by_name(offload_image::SECTION_NAME) else { return Vec::new() };
    let data = sec.data().unwrap();
    offload_image::read_section(data)
        .unwrap()
        .iter()
        .map(|i| {
            let mut k: Vec<String> = i.kernel_names().map(String::from).collect();
            k.sort();
            (i.kind.to_string(), i.arch.to_string(), k)
        })
        .collect()
}

/// A copy of `exe` (at `to`, executable) whose embedded `kind` image
/// ("cubin" or "PTX") has `count` bytes flipped in its middle; the bundle's
/// offsets and lengths stay valid, so only the image's checksum tells.
pub fn corrupt_image(exe: &Path, kind: &str, count: usize, to: &Path) {
    use object::{Object, ObjectSection};
    let mut bytes = std::fs::read(exe).unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    let file = object::File::parse(&*bytes).unwrap();
    let sec = file.section_by_name(offload_image::SECTION_NAME).expect("an image section");
    let (sec_start, _) = sec.file_range().expect("the section has file bytes");
    let data = sec.data().unwrap();
    let images = offload_image::read_section(data).unwrap();
    let img = images
        .iter()
        .find(|i| i.kind.to_string() == kind)
        .unwrap_or_else(|| panic!("no {kind} image in {}", exe.display()));
    let at = sec_start as usize + (img.bytes.as_ptr() as usize - data.as_ptr() as usize) + img.bytes.len() / 2;
    for b in &mut bytes[at..at + count] {
        *b ^= 0x5a;
    }
    std::fs::write(to, &bytes).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Runs the program at `exe` with `env` (and without `OFFLOAD_DEVICE`).
pub fn run_path(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env_remove("OFFLOAD_DEVICE").envs(env.iter().copied());
    output(&mut cmd)
}

/// The PTX text of the `arch` image embedded in a host binary.
pub fn embedded_ptx(exe: &Path, arch: &str) -> String {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(exe).unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    let file = object::File::parse(&*bytes).unwrap();
    let sec = file.section_by_name(offload_image::SECTION_NAME).expect("an image section");
    let images = offload_image::read_section(sec.data().unwrap()).unwrap();
    let ptx = images
        .iter()
        .find(|i| i.kind == offload_image::ImageKind::Ptx && i.arch == arch)
        .unwrap_or_else(|| panic!("no PTX for {arch} in {}", exe.display()));
    String::from_utf8_lossy(ptx.bytes).trim_end_matches('\0').to_string()
}
