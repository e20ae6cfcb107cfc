//! What the cargo phase hands to the rustc wrapper phases it starts: the
//! environment variables that select and configure a phase, and the image
//! map (which image object goes into which final binary).
//!
//! The cargo phase sets these on the inner cargos (see `device.rs` and
//! `host.rs`); the wrapper, started by those cargos for each rustc, reads
//! them (see `phases/`). `__OFFLOAD_GENERIC_DIR` is also read by the
//! `#[kernel]` macro (offload-macros, `kernel/instances.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which wrapper phase serves a cargo: `device` or `host`.
pub const PHASE_VAR: &str = "__OFFLOAD_PHASE";
/// The image map of the host phase (a JSON file, see [`ImageMapEntry`]).
pub const MAP_VAR: &str = "__OFFLOAD_IMAGE_MAP";
/// The user's own rustc wrapper, which the wrapper phases run rustc through.
pub const INNER_VAR: &str = "__OFFLOAD_INNER_WRAPPER";
/// File to which the device phase appends one line per crate it compiles.
pub const COMPILE_LOG_VAR: &str = "__OFFLOAD_COMPILE_LOG";
/// Where the instantiation lists of generic kernels live (both passes).
pub const GENERIC_DIR_VAR: &str = "__OFFLOAD_GENERIC_DIR";
/// Set on the host pass after a device pass failed under `--keep-going`
/// (its value: for which device, `nvptx64-nvidia-cuda sm_90`): the host
/// phase refuses to link a final binary that has no device image, rather
/// than link it without its kernels.
pub const DEVICE_FAILED_VAR: &str = "__OFFLOAD_DEVICE_FAILED";
/// The file to which the host phase logs the generic kernel instantiations
/// of each final binary (collect round only).
pub const COLLECT_VAR: &str = "__OFFLOAD_GENERIC_COLLECT";

/// The wrapper phase a process serves, from [`PHASE_VAR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Device,
    Host,
}

impl Phase {
    /// `Some` if cargo started this process as a rustc wrapper (`<wrapper>
    /// <rustc> <args…>`, with [`PHASE_VAR`] set); `None` for `cargo offload …`.
    /// An unknown phase name is `Some(None)`: rustc runs unchanged.
    pub fn of_invocation(argv: &[OsString]) -> Option<Option<Phase>> {
        let phase = std::env::var_os(PHASE_VAR)?;
        if argv.len() < 2 || argv[1] == "offload" {
            return None;
        }
        Some(match phase.to_str() {
            Some("device") => Some(Phase::Device),
            Some("host") => Some(Phase::Host),
            _ => None,
        })
    }
}

/// One entry of the image map: which object goes into which final binary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImageMapEntry {
    pub crate_name: String,
    /// Canonical path of the target's root source file.
    pub src_path: PathBuf,
    /// Built with the test harness.
    pub test: bool,
    pub object: PathBuf,
    pub kernels: Vec<String>,
}

/// Writes the map (cargo phase).
pub fn write_map(path: &Path, map: &[ImageMapEntry]) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(map).expect("serializable");
    offload_image::file::write_if_changed(path, &json).map(|_| ())
}

/// Reads the map (host wrapper phase); `None` if there is none.
pub fn read_map(path: &Path) -> Option<Vec<ImageMapEntry>> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Location of the map for one invocation: its own file (the process id
/// in the name), because two `cargo offload` runs may share a target
/// directory, and each host pass must read the map its own device pass
/// wrote. [`MapFile`] removes it when the invocation ends.
pub fn map_path(images_dir: &Path, profile_tag: &str) -> PathBuf {
    images_dir.join(format!("image-map-{profile_tag}-{}.json", std::process::id()))
}

/// The invocation's map file, removed when dropped.
pub struct MapFile(pub PathBuf);

impl Drop for MapFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
