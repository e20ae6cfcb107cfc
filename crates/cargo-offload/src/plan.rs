//! The build plan: from the command line, the workspace, the toolchain and
//! the selected devices, every command the cargo phase will run (one
//! device pass per image, the host pass) and every path they share. It runs
//! nothing: `--dry-run` prints it ([`Plan::dry_run`]), and tests check the
//! printed command lines without building anything.

use std::path::{Path, PathBuf};

use crate::cli::{CargoOpts, DeviceOpts};
use crate::device::{amdgpu_target_spec, device_target_dir, DevicePass};
use crate::errors::{CliError, Result};
use crate::handoff::{map_path, MapFile};
use crate::host::{Action, HostPass};
use crate::select::DeviceSel;
use crate::toolchain::DeviceToolchain;
use crate::workspace::Workspace;

/// The executables `cargo offload` hands to cargo and rustc: itself (as the
/// rustc wrapper) and `offload-linker`, installed beside it.
pub struct Executables {
    pub wrapper: PathBuf,
    pub linker: PathBuf,
}

impl Executables {
    /// This executable and the `offload-linker` beside it.
    pub fn find() -> Result<Executables> {
        let me =
            std::env::current_exe().map_err(CliError::io("could not locate", Path::new("the current executable")))?;
        let linker = me.with_file_name(format!("offload-linker{}", std::env::consts::EXE_SUFFIX));
        if !linker.is_file() {
            return Err(CliError::LinkerMissing { beside: me });
        }
        Ok(Executables { wrapper: me, linker })
    }
}

/// Everything one `cargo offload build|run|test|bench` runs.
pub struct Plan<'a> {
    pub tc: &'a DeviceToolchain,
    pub sels: &'a [DeviceSel],
    /// One device pass per selected device, in the order of `sels`.
    pub passes: Vec<DevicePass<'a>>,
    /// `<target>/offload/images`: the cubin cache and the image map.
    pub images_dir: PathBuf,
    /// `<images_dir>/<profile>`: the image objects the host binaries link.
    pub objects_dir: PathBuf,
    /// The instantiation lists of generic kernels (see `generic.rs`).
    pub generic_dir: PathBuf,
    /// This invocation's image map, removed when the plan is dropped.
    pub map: MapFile,
    cargo: &'a CargoOpts,
    action: &'a Action,
    wrapper: PathBuf,
    verbose: u8,
    quiet: bool,
    /// The host target directory.
    target_dir: PathBuf,
    /// `crate_cache::own_sources` of the workspace's offload packages.
    own_sources: String,
}

impl<'a> Plan<'a> {
    /// The plan for `action`; writes the AMD GPU target specification if an
    /// AMD GPU is selected (the only file it writes).
    pub fn new(
        dev: &DeviceOpts,
        cargo: &'a CargoOpts,
        action: &'a Action,
        ws: &Workspace,
        tc: &'a DeviceToolchain,
        sels: &'a [DeviceSel],
        exes: &Executables,
    ) -> Result<Plan<'a>> {
        let tests = matches!(action, Action::Test { .. } | Action::Bench { .. });
        let benches = matches!(action, Action::Bench { .. });
        let format = crate::output::MessageFormat::from_values(&cargo.message_format);
        let mode = [(dev.fast_math, "-fast-math"), (dev.fmad, "-fmad")].iter().find(|m| m.0).map_or("", |m| m.1);
        // One directory of instantiation lists per workspace that uses this
        // target directory: another workspace's lists say nothing about this one.
        let root_hash = offload_image::hash::hash32(&[&ws.root.display().to_string()]);
        let generic_dir = ws.target_dir.join("offload").join("generic").join(format!("{root_hash:08x}"));
        let own_sources = crate::crate_cache::own_sources(&ws.own_packages);
        let mut passes = Vec::new();
        for sel in sels {
            let target_arg = if sel.triple.starts_with("amdgcn") {
                amdgpu_target_spec(tc, &ws.target_dir.join("offload"))?.display().to_string()
            } else {
                sel.triple.clone()
            };
            passes.push(DevicePass {
                tc,
                triple: &sel.triple,
                target_arg,
                arch: &sel.arch,
                ptx_feature: sel.ptx_feature.clone(),
                cargo,
                tests,
                benches,
                check: action.checks(),
                lint_levels: crate::devflags::device_lint_levels(match action {
                    Action::Clippy { args } => args,
                    _ => &[],
                }),
                format,
                target_dir: device_target_dir(&ws.target_dir, &sel.triple, &format!("{}{mode}", sel.arch)),
                wrapper: exes.wrapper.clone(),
                linker: exes.linker.clone(),
                verbose: dev.verbose,
                quiet: dev.quiet,
                fast_math: dev.fast_math,
                fmad: dev.fmad,
                generic_dir: generic_dir.clone(),
                own_sources: own_sources.clone(),
                lib_deps: ws.lib_deps.clone(),
            });
        }
        let images_dir = ws.target_dir.join("offload").join("images");
        let archs: Vec<&str> = sels.iter().map(|d| d.arch.as_str()).collect();
        let profile =
            cargo.profile.clone().unwrap_or_else(|| if cargo.release { "release".into() } else { "dev".into() });
        let build_tag = format!("{profile}-{}{mode}", archs.join("+"));
        let map = MapFile(map_path(&images_dir, &build_tag));
        Ok(Plan {
            tc,
            sels,
            passes,
            objects_dir: images_dir.join(&profile),
            images_dir,
            generic_dir,
            map,
            cargo,
            action,
            wrapper: exes.wrapper.clone(),
            verbose: dev.verbose,
            quiet: dev.quiet,
            target_dir: ws.target_dir.clone(),
            own_sources,
        })
    }

    /// The host pass; with `collect`, the build-only collect round that logs
    /// the generic kernel instantiations to that file.
    pub fn host<'p>(&'p self, collect: Option<&'p Path>) -> HostPass<'p> {
        HostPass {
            cargo: self.cargo,
            action: self.action,
            wrapper: &self.wrapper,
            map: &self.map.0,
            verbose: self.verbose,
            quiet: self.quiet,
            generic_dir: &self.generic_dir,
            collect,
            target_dir: &self.target_dir,
            own_sources: &self.own_sources,
            device_failed: None,
        }
    }

    /// What `--dry-run` prints: each device pass, the embedding, the host
    /// pass (`check` and `clippy`: the host pass, then each device pass).
    pub fn dry_run(&self) -> String {
        let mut s = String::new();
        if self.action.checks() {
            s.push_str(&format!("# host pass\n{}\n", self.host(None).render()));
            for (pass, sel) in self.passes.iter().zip(self.sels) {
                s.push_str(&format!("# device pass ({} {})\n{}\n", sel.triple, sel.arch, pass.render()));
            }
            return s;
        }
        for (pass, sel) in self.passes.iter().zip(self.sels) {
            s.push_str(&format!("# device pass ({} {})\n{}\n", sel.triple, sel.arch, pass.render()));
        }
        let cubin = if self.tc.ptxas.is_some() { " + ptxas cubin" } else { "" };
        let images: Vec<String> = self
            .sels
            .iter()
            .map(|d| if d.is_nvptx() { format!("PTX {}{cubin}", d.arch) } else { format!("code object {}", d.arch) })
            .collect();
        s.push_str(&format!(
            "# embed: each final binary's images ({}), one bundle → {}/<crate>-<kind>-<hash>.o\n",
            images.join(", "),
            self.images_dir.display()
        ));
        s.push_str(&format!("# host pass\n{}\n", self.host(None).render()));
        s
    }
}
