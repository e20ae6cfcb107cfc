//! The embed phase: from the linked device images to an object file per
//! final binary, which the host linker takes.
//!
//! For each final binary: the PTX from the device pass, a cubin assembled by
//! `ptxas` where one is found (cached by the PTX's hash, so a rebuild that
//! changed nothing runs no `ptxas`), both written as one bundle
//! (`offload-image` format) into section `offload_images` of a relocatable
//! ELF object. The host pass links that object into the binary (the rustc
//! wrapper adds `-C link-arg=<object>`); `offload`'s runtime finds the
//! section through `__start_offload_images`/`__stop_offload_images`.
//! An object is rewritten only when its bytes change, so an unchanged image
//! does not make cargo relink the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::write::Object;
use object::{Architecture, BinaryFormat, Endianness, SectionFlags, SectionKind};
use offload_image::{ImageKind, OwnedImage};

use offload_image::file::{unique_tmp, write_if_changed};
use offload_image::hash::fnv64;

use crate::binary::elf_kernels;
use crate::device::DeviceArtifact;
use crate::errors::{CliError, Result};
use crate::handoff::ImageMapEntry;

/// Result of assembling one PTX.
pub enum Cubin {
    Bytes(Vec<u8>),
    /// ptxas cannot target this architecture (e.g. CUDA 13 dropped sm_50–sm_72).
    Unsupported(String),
}

/// Assembles `ptx` for `arch` with `ptxas -O3`, cached under `cache_dir`.
pub fn assemble(ptxas: &Path, ptx_path: &Path, ptx: &[u8], arch: &str, cache_dir: &Path) -> Result<Cubin> {
    let key = format!("{:016x}-{arch}", fnv64(ptx));
    let cached = cache_dir.join(format!("{key}.cubin"));
    if let Ok(bytes) = std::fs::read(&cached) {
        return Ok(Cubin::Bytes(bytes));
    }
    std::fs::create_dir_all(cache_dir).map_err(CliError::io("could not create", cache_dir))?;
    // A name of its own: another `cargo offload` may assemble the same PTX
    // at the same time (the first rename wins; both are the same bytes).
    let tmp = unique_tmp(&cached);
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={arch}")).arg("-O3").arg(ptx_path).arg("-o").arg(&tmp);
    let out = crate::child::output(&mut cmd).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    if crate::interrupt::interrupted() {
        let _ = std::fs::remove_file(&tmp);
        return Err(CliError::Interrupted);
    }
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
        if stderr.contains("is not defined for option 'gpu-name'") || stderr.contains("Unsupported gpu architecture") {
            return Ok(Cubin::Unsupported(stderr));
        }
        return Err(CliError::Ptxas { ptx: ptx_path.to_path_buf(), arch: arch.into(), stderr });
    }
    let bytes = std::fs::read(&tmp).map_err(CliError::io("could not read", &tmp));
    // Renamed only once complete: an interrupted ptxas leaves no cached cubin.
    let renamed = std::fs::rename(&tmp, &cached);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.map_err(CliError::io("could not write", &cached))?;
    bytes.map(Cubin::Bytes)
}

/// The ELF object carrying `bundle` in section `offload_images`, for the
/// host architecture `arch` (`std::env::consts::ARCH` spelling).
pub fn host_object(bundle: &[u8], arch: &str) -> Result<Vec<u8>> {
    let architecture = match arch {
        "x86_64" => Architecture::X86_64,
        "aarch64" => Architecture::Aarch64,
        "riscv64" => Architecture::Riscv64,
        "powerpc64" => Architecture::PowerPc64,
        other => return Err(CliError::HostArch(other.into())),
    };
    let mut obj = Object::new(BinaryFormat::Elf, architecture, Endianness::Little);
    let section =
        obj.add_section(Vec::new(), offload_image::SECTION_NAME.as_bytes().to_vec(), SectionKind::ReadOnlyData);
    // SHF_ALLOC: loaded at run time; SHF_GNU_RETAIN: kept by --gc-sections
    // (lld does not keep sections for __start_/__stop_ references alone).
    obj.section_mut(section).flags =
        SectionFlags::Elf { sh_flags: u64::from(object::elf::SHF_ALLOC) | u64::from(object::elf::SHF_GNU_RETAIN) };
    obj.append_section_data(section, bundle, 8);
    obj.write().map_err(CliError::ObjectWrite)
}

/// A device image the device passes built for one final binary.
#[derive(Debug, Clone)]
pub struct Built {
    pub artifact: DeviceArtifact,
    pub triple: String,
    pub arch: String,
}

/// The images of one image file: PTX (and its cubin where `ptxas` is found)
/// or an AMD GPU code object; with the kernel symbols it defines.
fn images_of(b: &Built, ptxas: Option<&Path>, out_dir: &Path) -> Result<(Vec<OwnedImage>, Vec<String>)> {
    let a = &b.artifact;
    let (triple, arch) = (b.triple.as_str(), b.arch.as_str());
    let bytes = std::fs::read(&a.image).map_err(CliError::io("could not read", &a.image))?;
    let (kind, kernels) = if triple.starts_with("nvptx") {
        (ImageKind::Ptx, offload_image::ptx_entries(&String::from_utf8_lossy(&bytes)))
    } else {
        (ImageKind::AmdgpuElf, elf_kernels(&bytes))
    };
    let kernels: Vec<String> = kernels.into_iter().filter(|k| k.starts_with(offload_linker::KERNEL_PREFIX)).collect();
    let mut payload = bytes.clone();
    if kind == ImageKind::Ptx {
        payload.push(0);
    }
    let mut images =
        vec![OwnedImage { kind, triple: triple.into(), arch: arch.into(), kernels: kernels.clone(), bytes: payload }];
    if let (ImageKind::Ptx, Some(ptxas), false) = (kind, ptxas, kernels.is_empty()) {
        match assemble(ptxas, &a.image, &bytes, arch, &out_dir.join("cubin-cache"))? {
            Cubin::Bytes(cubin) => images.push(OwnedImage {
                kind: ImageKind::Cubin,
                triple: triple.into(),
                arch: arch.into(),
                kernels: kernels.clone(),
                bytes: cubin,
            }),
            Cubin::Unsupported(why) => {
                crate::status::warn(format!("ptxas cannot assemble for {arch}; embedding PTX only ({why})"))
            }
        }
    }
    Ok((images, kernels))
}

/// Embeds the images of each final binary (from every device pass: one
/// bundle holds them all, e.g. PTX and cubin for sm_80 and sm_90 and an AMD
/// code object) into one object file; returns the map for the host wrapper.
/// Objects go to `objects_dir` (one per cargo profile): the path of a
/// binary's object must stay the same from build to build, since cargo
/// relinks the binary when that file changes (see the wrapper's dep-info),
/// not when the wrapper names another file.
pub fn embed(
    built: &[Built],
    ptxas: Option<&Path>,
    out_dir: &Path,
    objects_dir: &Path,
    mut status: impl FnMut(&str, String),
) -> Result<Vec<ImageMapEntry>> {
    // One group per final binary, in the order the first pass reported them.
    let mut groups: Vec<(PathBuf, &DeviceArtifact, Vec<&Built>)> = Vec::new();
    for b in built {
        let a = &b.artifact;
        let src = std::fs::canonicalize(&a.src_path).unwrap_or_else(|_| a.src_path.clone());
        match groups.iter_mut().find(|(s, g, _)| *s == src && g.crate_name == a.crate_name && g.test == a.test) {
            Some((_, _, members)) => members.push(b),
            None => groups.push((src, a, vec![b])),
        }
    }
    let mut map = Vec::new();
    for (src, a, members) in groups {
        let mut images = Vec::new();
        let mut kernels: Vec<String> = Vec::new();
        for b in members {
            let (imgs, ks) = images_of(b, ptxas, out_dir)?;
            images.extend(imgs);
            for k in ks {
                if !kernels.contains(&k) {
                    kernels.push(k);
                }
            }
        }
        let what: Vec<String> = images.iter().map(|i| format!("{} {}", i.kind, i.arch)).collect();
        let bundle = offload_image::write_bundle(&images);
        let object = host_object(&bundle, std::env::consts::ARCH)?;
        let h = format!("{:08x}", fnv64(src.to_string_lossy().as_bytes()) as u32);
        let kind_tag = if a.test { "test" } else { a.kinds.first().map(String::as_str).unwrap_or("bin") };
        let path = objects_dir.join(format!("{}-{kind_tag}-{h}.o", a.crate_name));
        write_if_changed(&path, &object).map_err(CliError::io("could not write", &path))?;
        status(
            "Embedding",
            format!("device image in {} ({}; {} kernel(s))", a.describe(), what.join(" + "), kernels.len()),
        );
        map.push(ImageMapEntry {
            crate_name: a.crate_name.clone(),
            src_path: src,
            test: a.test,
            object: path,
            kernels,
        });
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object as _, ObjectSection};

    #[test]
    fn object_holds_the_bundle_in_its_section() {
        let bundle = offload_image::write_bundle(&[OwnedImage {
            kind: ImageKind::Ptx,
            triple: "nvptx64-nvidia-cuda".into(),
            arch: "sm_90".into(),
            kernels: vec!["__offload_kernel_x".into()],
            bytes: b".version 7.8\0".to_vec(),
        }]);
        let obj = host_object(&bundle, "x86_64").unwrap();
        let file = object::File::parse(&*obj).unwrap();
        let sec = file.section_by_name("offload_images").expect("section");
        assert_eq!(sec.data().unwrap(), &bundle[..]);
        assert_eq!(sec.align(), 8);
        match sec.flags() {
            SectionFlags::Elf { sh_flags } => {
                assert_ne!(sh_flags & u64::from(object::elf::SHF_ALLOC), 0);
                assert_ne!(sh_flags & u64::from(object::elf::SHF_GNU_RETAIN), 0);
            }
            f => panic!("{f:?}"),
        }
        let (imgs, _) = offload_image::read_bundle(sec.data().unwrap()).unwrap();
        assert_eq!(imgs[0].kernel_names().collect::<Vec<_>>(), ["__offload_kernel_x"]);
    }

    /// Two builds assembling the same PTX at once (the issue: both used
    /// `<key>.cubin.tmp`, and the second rename found no file): with a
    /// ptxas that creates its output, then works a while, both succeed.
    #[cfg(unix)]
    #[test]
    fn concurrent_assembles_of_one_ptx_both_succeed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("offload-assemble-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ptxas = dir.join("ptxas");
        std::fs::write(&ptxas, "#!/bin/sh\nfor a; do out=$a; done\nprintf cubin > \"$out\"\nsleep 0.5\n").unwrap();
        std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ptx = dir.join("k.ptx");
        std::fs::write(&ptx, ".version 7.8").unwrap();
        let cache = dir.join("cubin-cache");
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (ptxas, ptx, cache) = (ptxas.clone(), ptx.clone(), cache.clone());
                std::thread::spawn(move || assemble(&ptxas, &ptx, b".version 7.8", "sm_90", &cache))
            })
            .collect();
        for r in runs {
            match r.join().unwrap() {
                Ok(Cubin::Bytes(b)) => assert_eq!(b, b"cubin"),
                Ok(Cubin::Unsupported(w)) => panic!("{w}"),
                Err(e) => panic!("{e}"),
            }
        }
        let left: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 1, "one cached cubin, no temporary files: {left:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
