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
    use crate::format::sample;
    use crate::write::write_bundle;

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

    /// Any changed byte of an entry's contents (strings or image) fails
    /// `verify`, naming the image; the other entries stay intact.
    #[test]
    fn corrupted_entries_are_detected() {
        let imgs = sample();
        let bytes = write_bundle(&imgs);
        let (read, _) = read_bundle(&bytes).unwrap();
        // Every byte of each payload region, flipped in turn.
        let regions: Vec<(usize, usize, usize)> = read
            .iter()
            .enumerate()
            .flat_map(|(n, i)| {
                [i.triple.as_bytes(), i.arch.as_bytes(), i.kernels.as_bytes(), i.bytes]
                    .map(|r| (n, r.as_ptr() as usize - bytes.as_ptr() as usize, r.len()))
            })
            .collect();
        for (entry, start, len) in regions {
            for at in start..start + len {
                let mut bad = bytes.clone();
                bad[at] ^= 0x20;
                let Ok((imgs, _)) = read_bundle(&bad) else { continue }; // e.g. no longer UTF-8
                let e = imgs[entry].verify().expect_err("a changed byte is detected");
                assert_eq!((e.kind, e.stored), (imgs[entry].kind, imgs[entry].checksum.unwrap()));
                assert_ne!(e.computed, e.stored);
                assert!(imgs[1 - entry].verify().is_ok(), "the other entry is intact");
            }
        }
        // The message names the image.
        let mut bad = bytes.clone();
        let at = image_offset(&bytes, 1);
        bad[at] ^= 1;
        let (imgs, _) = read_bundle(&bad).unwrap();
        let msg = imgs[1].verify().unwrap_err().to_string();
        assert!(msg.starts_with("the embedded sm_90 cubin image is corrupted (CRC-32 "), "{msg}");
        // A changed kind code (PTX ↔ cubin) is detected too.
        let mut bad = bytes.clone();
        bad[HEADER_SIZE] = 2;
        let (imgs, _) = read_bundle(&bad).unwrap();
        assert!(imgs[0].verify().is_err());
    }

    /// Offset of the first image byte of entry `n`.
    fn image_offset(bundle: &[u8], n: usize) -> usize {
        u64::from_le_bytes(bundle[HEADER_SIZE + n * ENTRY_SIZE + 32..][..8].try_into().unwrap()) as usize
    }

    /// Truncations and random changes of every header and entry field never
    /// make the reader panic (or allocate what the bytes cannot back): each
    /// is a bundle or a `FormatError`. Deterministic (xorshift), so a
    /// failure reproduces.
    #[test]
    fn damaged_bundles_are_errors_not_panics() {
        let bytes = write_bundle(&sample());
        for cut in 0..bytes.len() {
            let _ = read_bundle(&bytes[..cut]);
            let _ = read_section(&bytes[..cut]);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let table_end = HEADER_SIZE + 2 * ENTRY_SIZE;
        for _ in 0..20_000 {
            let mut bad = bytes.clone();
            for _ in 0..1 + next() % 3 {
                let r = next();
                // Mostly the header and the table (lengths, offsets, counts),
                // sometimes anywhere; extreme values or random bytes.
                let at = if r % 4 == 0 { (r >> 8) as usize % bad.len() } else { (r >> 8) as usize % table_end };
                bad[at] = match r % 5 {
                    0 => 0xff,
                    1 => 0,
                    _ => (r >> 40) as u8,
                };
            }
            if let Ok((imgs, size)) = read_bundle(&bad) {
                assert!(size <= bad.len());
                for i in imgs {
                    let _ = i.verify();
                }
            }
            let _ = read_section(&bad);
        }
        // Length fields at their extremes.
        for (at, v) in [
            (12, u32::MAX as u64),
            (16, u64::MAX),
            (16, u64::MAX - 7),
            (HEADER_SIZE + 40, u64::MAX),
            (HEADER_SIZE + 12, u32::MAX as u64),
        ] {
            let mut bad = bytes.clone();
            if at == 12 || at == HEADER_SIZE + 12 {
                bad[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                bad[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            assert!(read_bundle(&bad).is_err(), "field at {at} = {v}");
        }
    }

    #[test]
    fn section_with_two_bundles_and_padding() {
        let a = write_bundle(&sample()[..1]);
        let b = write_bundle(&sample()[1..]);
        let mut section = vec![0u8; 16];
        section.extend(&a);
        section.extend([0u8; 8]);
        section.extend(&b);
        let imgs = read_section(&section).unwrap();
        assert_eq!(imgs.len(), 2);
        assert_eq!(imgs[0].kind, ImageKind::Ptx);
        assert_eq!(imgs[1].kind, ImageKind::Cubin);
        assert!(read_section(&[0u8; 24]).unwrap().is_empty());
    }

    #[test]
    fn rejects_corruption() {
        let mut bytes = write_bundle(&sample());
        assert_eq!(read_bundle(&bytes[..10]).unwrap_err(), FormatError::Truncated { needed: 32, have: 10 });
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert_eq!(read_bundle(&bad).unwrap_err(), FormatError::BadMagic);
        let mut bad = bytes.clone();
        bad[8] = 9;
        assert_eq!(read_bundle(&bad).unwrap_err(), FormatError::UnsupportedVersion(9));
        assert!(FormatError::UnsupportedVersion(9).to_string().contains("reads versions 1 to 2"));
        // image offset beyond the end
        bytes[HEADER_SIZE + 32..HEADER_SIZE + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(read_bundle(&bytes).unwrap_err(), FormatError::OutOfBounds { entry: 0, field: "image" });
    }
}
