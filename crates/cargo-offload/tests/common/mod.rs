//! Helpers for the end-to-end tests: fixture copies, running the real
//! `cargo offload`, reading the images embedded in a host binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// One target directory for most fixtures, so dependencies build once.
pub fn shared_target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-target")
}

pub fn require_ptxas() -> bool {
    std::env::var("OFFLOAD_REQUIRE_PTXAS").is_ok_and(|v| v == "1")
}

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

fn output(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("spawn");
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
    for k in ["__OFFLOAD_PHASE", "__OFFLOAD_IMAGE_MAP", "__OFFLOAD_INNER_WRAPPER", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "OFFLOAD_DEVICE"] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    output(&mut cmd)
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

pub struct Fixture {
    pub dir: PathBuf,
    target: PathBuf,
    /// Held while this fixture builds into the shared target directory.
    lock: Option<String>,
}

/// Copies of one fixture build to the same paths in the shared target
/// directory (`debug/fixture_bin_only`, its device image, ...), so the tests
/// of one fixture take turns: otherwise a test can read the binary another
/// test just rebuilt with other flags.
static IN_USE: Mutex<Option<HashSet<String>>> = Mutex::new(None);
static RELEASED: Condvar = Condvar::new();

fn take_turn(name: &str) {
    let mut in_use = IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    while in_use.get_or_insert_with(HashSet::new).contains(name) {
        in_use = RELEASED.wait(in_use).unwrap_or_else(|e| e.into_inner());
    }
    in_use.get_or_insert_with(HashSet::new).insert(name.to_string());
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(name) = self.lock.take() {
            let mut in_use = IN_USE.lock().unwrap_or_else(|e| e.into_inner());
            in_use.get_or_insert_with(HashSet::new).remove(&name);
            RELEASED.notify_all();
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

impl Fixture {
    /// A fresh copy of `tests/fixtures/<name>` using the shared target dir.
    pub fn new(name: &str) -> Self {
        Self::with_target(name, shared_target_dir())
    }

    /// A fresh copy with its own target directory.
    pub fn with_target(name: &str, target: PathBuf) -> Self {
        let lock = (target == shared_target_dir()).then(|| {
            take_turn(name);
            name.to_string()
        });
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures").join(format!("{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures").join(name), &dir);
        let offload = repo_root().join("crates/offload");
        let manifest = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap().replace("@OFFLOAD@", offload.to_str().unwrap());
        // Its own workspace: the copy lives below this repository's.
        let text = if text.contains("[workspace]") { text } else { text + "\n[workspace]\n" };
        std::fs::write(&manifest, text).unwrap();
        Fixture { dir, target, lock }
    }

    pub fn target_dir(&self) -> &Path {
        &self.target
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
    let img = images.iter().find(|i| i.kind.to_string() == kind).unwrap_or_else(|| panic!("no {kind} image in {}", exe.display()));
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
