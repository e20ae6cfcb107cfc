//! The bundle format as a whole, through the public API: what the writer
//! writes the reader reads back, and damaged bundles are errors (never
//! panics) that name the damaged image. (Kept out of `read.rs` and
//! `write.rs` so that neither module's tests need the other.)

use offload_image::{
    read_bundle, read_section, write_bundle, FormatError, ImageKind, OwnedImage, ENTRY_SIZE, HEADER_SIZE,
};

/// Two images of the same kernels (PTX for sm_80, a cubin for sm_90).
fn sample() -> Vec<OwnedImage> {
    vec![
        OwnedImage {
            kind: ImageKind::Ptx,
            triple: "nvptx64-nvidia-cuda".into(),
            arch: "sm_80".into(),
            kernels: vec!["k_a".into(), "k_b".into()],
            bytes: b".version 7.8\n".to_vec(),
        },
        OwnedImage {
            kind: ImageKind::Cubin,
            triple: "nvptx64-nvidia-cuda".into(),
            arch: "sm_90".into(),
            kernels: vec!["k_a".into(), "k_b".into()],
            bytes: vec![0x7f, b'E', b'L', b'F', 1, 2, 3],
        },
    ]
}

#[test]
fn round_trip() {
    let imgs = sample();
    let bytes = write_bundle(&imgs);
    assert_eq!(bytes.len() % 8, 0);
    let (read, size) = read_bundle(&bytes).unwrap();
    assert_eq!(size, bytes.len());
    assert_eq!(read.len(), 2);
    for (r, w) in read.iter().zip(&imgs) {
        assert_eq!(r.kind, w.kind);
        assert_eq!(r.triple, w.triple);
        assert_eq!(r.arch, w.arch);
        assert_eq!(r.kernel_names().collect::<Vec<_>>(), w.kernels);
        assert_eq!(r.bytes, &w.bytes[..]);
        assert!(r.checksum.is_some());
        assert_eq!(r.verify(), Ok(()));
    }
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
            let Ok((imgs, _)) = read_bundle(&bad) else {
                continue;
            }; // e.g. no longer UTF-8
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
