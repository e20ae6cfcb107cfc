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
}

/// The embedded images, read and checked once: a corrupted image (bytes
/// changed after `cargo offload` wrote them, which could crash the CUDA
/// driver) is left out, with one warning line on stderr naming it, whichever
/// backend asks first. The error is a malformed section.
pub(crate) fn embedded() -> Result<&'static Embedded, &'static offload_image::FormatError> {
    static EMBEDDED: std::sync::OnceLock<Result<Embedded, offload_image::FormatError>> = std::sync::OnceLock::new();
    EMBEDDED
        .get_or_init(|| {
            let all = offload_image::read_section(section())?;
            let mut intact = std::vec::Vec::with_capacity(all.len());
            let mut corrupted = 0;
            for image in all {
                match image.verify() {
                    Ok(()) => intact.push(image),
                    Err(e) => {
                        corrupted += 1;
                        std::eprintln!("offload: warning: {e}; it is not used (rebuild the binary)");
                    }
                }
            }
            Ok(Embedded { intact, corrupted })
        })
        .as_ref()
}
