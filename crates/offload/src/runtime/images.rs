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
