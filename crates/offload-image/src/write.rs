//! Writing a bundle (see the [layout](crate#layout)).

use crate::format::{align8, entry_checksum, OwnedImage, ENTRY_SIZE, FORMAT_VERSION, HEADER_SIZE, MAGIC};

/// Serializes images into one bundle (see the [layout](crate#layout)).
pub fn write_bundle(images: &[OwnedImage]) -> Vec<u8> {
    let table_end = HEADER_SIZE + ENTRY_SIZE * images.len();
    let mut out = vec![0u8; table_end];
    let mut entries = Vec::with_capacity(images.len());
    let push = |out: &mut Vec<u8>, data: &[u8]| -> (usize, usize) {
        let off = out.len();
        out.extend_from_slice(data);
        out.resize(align8(out.len()), 0);
        (off, data.len())
    };
    for image in images {
        let triple = push(&mut out, image.triple.as_bytes());
        let arch = push(&mut out, image.arch.as_bytes());
        let kernel_list = image.kernels.join("\n");
        let kernels = push(&mut out, kernel_list.as_bytes());
        let bytes = push(&mut out, &image.bytes);
        let checksum = entry_checksum(image.kind, 0, &image.triple, &image.arch, &kernel_list, &image.bytes);
        entries.push((image.kind, triple, arch, kernels, bytes, checksum));
    }
    let size = out.len() as u64;
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&(images.len() as u32).to_le_bytes());
    out[16..24].copy_from_slice(&size.to_le_bytes());
    for (i, (kind, triple, arch, kernels, bytes, checksum)) in entries.into_iter().enumerate() {
        let e = &mut out[HEADER_SIZE + i * ENTRY_SIZE..HEADER_SIZE + (i + 1) * ENTRY_SIZE];
        e[0..4].copy_from_slice(&kind.code().to_le_bytes());
        let mut put32 = |at: usize, (off, len): (usize, usize)| {
            e[at..at + 4].copy_from_slice(&(off as u32).to_le_bytes());
            e[at + 4..at + 8].copy_from_slice(&(len as u32).to_le_bytes());
        };
        put32(8, triple);
        put32(16, arch);
        put32(24, kernels);
        e[32..40].copy_from_slice(&(bytes.0 as u64).to_le_bytes());
        e[40..48].copy_from_slice(&(bytes.1 as u64).to_le_bytes());
        e[48..52].copy_from_slice(&checksum.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ImageKind;

    #[test]
    fn golden_bytes() {
        let img = OwnedImage {
            kind: ImageKind::Ptx,
            triple: "t".into(),
            arch: "sm_90".into(),
            kernels: vec!["k".into()],
            bytes: b"PTX".to_vec(),
        };
        let bytes = write_bundle(&[img]);
        // The checksum, computed independently: CRC-32 (zlib's) of
        // kind 1 and flags 0 as u32 LE, then "t", "sm_90", "k", "PTX".
        let crc = crc32fast::hash(b"\x01\0\0\0\0\0\0\0tsm_90kPTX");
        assert_eq!(crc, 0x991e_7ead, "CRC-32 of the golden entry (Python: zlib.crc32)");
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            // header: magic, version 2, count 1, size 120, reserved
            b"OFLDIMG\0".as_slice(), &[2, 0, 0, 0], &[1, 0, 0, 0], &[120, 0, 0, 0, 0, 0, 0, 0], &[0; 8],
            // entry: kind 1, flags 0
            &[1, 0, 0, 0], &[0, 0, 0, 0],
            &[88, 0, 0, 0, 1, 0, 0, 0],   // triple at 88, len 1
            &[96, 0, 0, 0, 5, 0, 0, 0],   // arch at 96, len 5
            &[104, 0, 0, 0, 1, 0, 0, 0],  // kernels at 104, len 1
            &[112, 0, 0, 0, 0, 0, 0, 0], &[3, 0, 0, 0, 0, 0, 0, 0], // image at 112, len 3
            &crc.to_le_bytes(), &[0, 0, 0, 0], // checksum, reserved
            b"t\0\0\0\0\0\0\0", b"sm_90\0\0\0", b"k\0\0\0\0\0\0\0", b"PTX\0\0\0\0\0",
        ].concat();
        assert_eq!(bytes, expected);
    }
}
