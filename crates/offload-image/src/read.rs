//! Reading bundles (see the [layout](crate#layout)): every offset and
//! length checked, so a damaged bundle is a [`FormatError`], never a panic.

use crate::format::{FormatError, Image, ImageKind, ENTRY_SIZE, ENTRY_SIZE_V1, FORMAT_VERSION, HEADER_SIZE, MAGIC};

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads one bundle (format version 1 or 2) from the start of `bytes`;
/// returns its images and its size. Every offset and length is checked
/// against the bundle; the images' checksums are not (see [`Image::verify`]).
pub fn read_bundle(bytes: &[u8]) -> Result<(Vec<Image<'_>>, usize), FormatError> {
    if bytes.len() < HEADER_SIZE {
        return Err(FormatError::Truncated { needed: HEADER_SIZE, have: bytes.len() });
    }
    if bytes[0..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let version = u32_at(bytes, 8);
    let entry_size = match version {
        1 => ENTRY_SIZE_V1,
        FORMAT_VERSION => ENTRY_SIZE,
        _ => return Err(FormatError::UnsupportedVersion(version)),
    };
    let count = u32_at(bytes, 12) as usize;
    let size64 = u64_at(bytes, 16);
    let table_end = HEADER_SIZE.saturating_add(count.saturating_mul(entry_size));
    if !size64.is_multiple_of(8) || size64 < table_end as u64 {
        return Err(FormatError::BadSize(size64));
    }
    let size = usize::try_from(size64).map_err(|_| FormatError::BadSize(size64))?;
    if bytes.len() < size {
        return Err(FormatError::Truncated { needed: size, have: bytes.len() });
    }
    let bundle = &bytes[..size];
    let mut images = Vec::with_capacity(count);
    for i in 0..count {
        let e = &bundle[HEADER_SIZE + i * entry_size..HEADER_SIZE + (i + 1) * entry_size];
        let code = u32_at(e, 0);
        let kind = ImageKind::from_code(code).ok_or(FormatError::UnknownKind(code))?;
        let range = |field: &'static str, off: u64, len: u64| -> Result<&[u8], FormatError> {
            let end = off.checked_add(len).filter(|&end| end <= size as u64);
            match end {
                Some(end) => Ok(&bundle[off as usize..end as usize]),
                None => Err(FormatError::OutOfBounds { entry: i, field }),
            }
        };
        let string = |field: &'static str, at: usize| -> Result<&str, FormatError> {
            let raw = range(field, u32_at(e, at) as u64, u32_at(e, at + 4) as u64)?;
            std::str::from_utf8(raw).map_err(|_| FormatError::NotUtf8 { entry: i, field })
        };
        images.push(Image {
            kind,
            triple: string("triple", 8)?,
            arch: string("arch", 16)?,
            kernels: string("kernels", 24)?,
            bytes: range("image", u64_at(e, 32), u64_at(e, 40))?,
            checksum: (version >= 2).then(|| u32_at(e, 48)),
        });
    }
    Ok((images, size))
}

/// Reads every bundle in a linker section that holds several bundles back to
/// back (one per object file that contributed one). Zero bytes between
/// bundles (alignment padding a linker may insert) are skipped.
pub fn read_section(mut bytes: &[u8]) -> Result<Vec<Image<'_>>, FormatError> {
    let mut all = Vec::new();
    loop {
        while bytes.len() >= 8 && bytes[..8] == [0; 8] {
            bytes = &bytes[8..];
        }
        if bytes.iter().all(|&b| b == 0) {
            return Ok(all);
        }
        let (images, size) = read_bundle(bytes)?;
        all.extend(images);
        bytes = &bytes[size..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle of version 1 (no checksums), as earlier `cargo offload`s
    /// wrote it, is still read; its images pass `verify`.
    #[test]
    fn version_1_bundles_are_read() {
        #[rustfmt::skip]
        let v1: Vec<u8> = [
            b"OFLDIMG\0".as_slice(), &[1, 0, 0, 0], &[1, 0, 0, 0], &[112, 0, 0, 0, 0, 0, 0, 0], &[0; 8],
            &[2, 0, 0, 0], &[0, 0, 0, 0],
            &[80, 0, 0, 0, 1, 0, 0, 0], &[88, 0, 0, 0, 5, 0, 0, 0], &[96, 0, 0, 0, 1, 0, 0, 0],
            &[104, 0, 0, 0, 0, 0, 0, 0], &[3, 0, 0, 0, 0, 0, 0, 0],
            b"t\0\0\0\0\0\0\0", b"sm_90\0\0\0", b"k\0\0\0\0\0\0\0", b"ELF\0\0\0\0\0",
        ].concat();
        let (imgs, size) = read_bundle(&v1).unwrap();
        assert_eq!(size, 112);
        assert_eq!(imgs.len(), 1);
        let i = imgs[0];
        assert_eq!(
            (i.kind, i.triple, i.arch, i.kernels, i.bytes, i.checksum),
            (ImageKind::Cubin, "t", "sm_90", "k", &b"ELF"[..], None)
        );
        assert_eq!(i.verify(), Ok(()));
    }
}
