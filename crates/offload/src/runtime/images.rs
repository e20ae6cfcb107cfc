//! The device images embedded in this binary.
//!
//! `cargo offload` links one object file into each final binary whose
//! section `offload_images` holds the binary's image bundle (format:
//! `offload-image`). On ELF targets the linker defines
//! `__start_offload_images` / `__stop_offload_images` around that section
//! (GNU ld and lld do so for every section whose name is a C identifier).
//! This crate always contributes eight zero bytes to the section, so the
//! symbols exist and the binary links also when it was built without
//! `cargo offload` (plain `cargo build`); the reader skips zero padding.
//! The technique is linkme's (`dtolnay/linkme`, `impl/src/linker.rs`).

/// The bytes of the `offload_images` section.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn section() -> &'static [u8] {
    extern "C" {
        #[link_name = "__start_offload_images"]
        static START: u8;
        #[link_name = "__stop_offload_images"]
        static STOP: u8;
    }
    #[used]
    #[link_section = "offload_images"]
    static PADDING: [u8; 8] = [0; 8];

    // SAFETY: the linker places `START` at the first and `STOP` one past the
    // last byte of the section, which `PADDING` guarantees exists; the
    // section is read-only data that lives as long as the program.
    unsafe {
        let start = core::ptr::addr_of!(START);
        let stop = core::ptr::addr_of!(STOP);
        let len = (stop as usize).saturating_sub(start as usize);
        core::slice::from_raw_parts(start, len)
    }
}

/// Other object formats have no embedding yet: no images, host fallback.
#[cfg(not(all(target_os = "linux", not(miri))))]
pub(crate) fn section() -> &'static [u8] {
    &[]
}

/// What this binary's image section holds, read once per process.
pub(crate) struct Embedded {
    /// The images whose checksums match (see `offload_image::Image::verify`).
    pub intact: std::vec::Vec<offload_image::Image<'static>>,
    /// How many images were corrupted (each named in a warning on stderr).
    pub corrupted: usize,
    /// Why the section could not be read at all (a damaged bundle header:
    /// magic, version, count or size); then no image is used.
    pub damaged: Option<offload_image::FormatError>,
}

/// The embedded images, read and checked once: a corrupted image (bytes
/// changed after `cargo offload` wrote them, which could crash the CUDA
/// driver) is left out, and a damaged section (whose header cannot be read)
/// gives no images, each with one warning line on stderr, whichever backend
/// asks first. The CUDA backend then has no image for the GPU (an error under
/// `OFFLOAD_DEVICE=cuda`, the host fallback with a warning otherwise); the
/// host fallback runs with the limits of a binary without images.
pub(crate) fn embedded() -> &'static Embedded {
    static EMBEDDED: std::sync::OnceLock<Embedded> = std::sync::OnceLock::new();
    EMBEDDED.get_or_init(|| {
        let (embedded, warnings) = read(section());
        for w in warnings {
            std::eprintln!("{w}");
        }
        embedded
    })
}

/// Reads an image section: what it holds, and the warnings to print.
fn read(section: &'static [u8]) -> (Embedded, std::vec::Vec<std::string::String>) {
    let mut warnings = std::vec::Vec::new();
    let all = match offload_image::read_section(section) {
        Ok(all) => all,
        Err(e) => {
            warnings.push(std::format!(
                "offload: warning: the device image section of this binary is damaged ({e}); no device image is \
                 used (rebuild the binary)"
            ));
            return (Embedded { intact: std::vec::Vec::new(), corrupted: 0, damaged: Some(e) }, warnings);
        }
    };
    let mut intact = std::vec::Vec::with_capacity(all.len());
    let mut corrupted = 0;
    for image in all {
        match image.verify() {
            Ok(()) => intact.push(image),
            Err(e) => {
                corrupted += 1;
                warnings.push(std::format!("offload: warning: {e}; it is not used (rebuild the binary)"));
            }
        }
    }
    (Embedded { intact, corrupted, damaged: None }, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_image::{ImageKind, OwnedImage};
    use std::vec;

    /// A section (padding, then a bundle of one PTX image), leaked as the
    /// real one lives for the whole program.
    fn bundle() -> &'static mut [u8] {
        let image = OwnedImage {
            kind: ImageKind::Ptx,
            triple: "nvptx64-nvidia-cuda".into(),
            arch: "sm_90".into(),
            kernels: vec!["k".into()],
            bytes: b".version 8.0\n".to_vec(),
        };
        let mut section = vec![0u8; 8];
        section.extend(offload_image::write_bundle(&[image]));
        section.leak()
    }

    #[test]
    fn an_intact_section_gives_its_images_silently() {
        let (e, warnings) = read(bundle());
        assert_eq!((e.intact.len(), e.corrupted, e.damaged.is_none(), warnings.len()), (1, 0, true, 0));
        let (e, warnings) = read(&[0; 16]);
        assert_eq!((e.intact.len(), e.damaged.is_none(), warnings.len()), (0, true, 0));
    }

    /// A damaged bundle header (here the format version, 8 bytes after the
    /// section's padding) is one warning and no images, not silence.
    #[test]
    fn a_damaged_header_is_one_warning_and_no_images() {
        let section = bundle();
        section[8 + 8] ^= 0x5a;
        let (e, warnings) = read(section);
        assert!(e.intact.is_empty() && e.corrupted == 0, "{}", e.intact.len());
        assert!(matches!(e.damaged, Some(offload_image::FormatError::UnsupportedVersion(_))), "{:?}", e.damaged);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "offload: warning: the device image section of this binary is damaged (device image bundle has \
                 format version "
            ) && warnings[0].ends_with("); no device image is used (rebuild the binary)"),
            "{}",
            warnings[0]
        );
        // A damaged magic, count or size: the same.
        for at in [8, 8 + 12, 8 + 16] {
            let section = bundle();
            section[at] ^= 0x5a;
            let (e, warnings) = read(section);
            assert!(e.damaged.is_some() && e.intact.is_empty() && warnings.len() == 1, "byte {at}: {warnings:?}");
        }
    }
}
