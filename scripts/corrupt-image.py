#!/usr/bin/env python3
"""Writes a copy of a binary built by `cargo offload` with bytes of one of its
embedded device images changed, as a damaged download or disk would: the
bundle's offsets and lengths stay valid, so only the image's checksum can
tell (crates/offload-image, format version 2).

    corrupt-image.py IN OUT KIND AT [COUNT]
    corrupt-image.py IN OUT header FIELD

KIND: cubin or ptx (the first image of that kind); AT: where in the image,
as a fraction 0..1 of its length; COUNT: bytes to flip (default 16).
`header` damages a field of the first bundle's header instead (FIELD:
magic, version, count or size), which no checksum covers: the runtime must
notice that the section cannot be read.
Reads the ELF section headers itself (ELF64 little-endian), so it needs no
tools. Exits 2 if the binary has no such image.
"""
import os
import struct
import sys

KINDS = {"ptx": 1, "cubin": 2}


def section(data, name):
    """(file offset, size) of the ELF64 LE section `name`."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "an ELF64 little-endian file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    for h in headers:
        start = strtab[4] + h[0]
        end = data.index(b"\0", start)
        if data[start:end].decode() == name:
            return h[4], h[5]
    return None


def images(data, start, size):
    """(kind, image offset in the file, image length) of every entry."""
    out = []
    at, end = start, start + size
    while at + 32 <= end:
        if data[at:at + 8] == b"\0" * 8:
            at += 8
            continue
        magic, version, count, total = struct.unpack_from("<8sIIQ", data, at)
        assert magic == b"OFLDIMG\0", "a bundle"
        entry = {1: 48, 2: 56}[version]
        for i in range(count):
            e = at + 32 + i * entry
            kind, = struct.unpack_from("<I", data, e)
            off, length = struct.unpack_from("<QQ", data, e + 32)
            out.append((kind, at + off, length))
        at += total
    return out


HEADER_FIELDS = {"magic": 0, "version": 8, "count": 12, "size": 16}


def first_bundle(data, start, size):
    """File offset of the first bundle in the section (after zero padding)."""
    at = start
    while at + 8 <= start + size and data[at:at + 8] == b"\0" * 8:
        at += 8
    return at if at + 32 <= start + size else None


def main():
    src, dst, kind, where = sys.argv[1:5]
    if kind == "header":
        data = bytearray(open(src, "rb").read())
        sec = section(data, "offload_images")
        at = first_bundle(data, *sec) if sec else None
        if at is None:
            print(f"{src}: no image bundle", file=sys.stderr)
            sys.exit(2)
        data[at + HEADER_FIELDS[where]] ^= 0x5A
        open(dst, "wb").write(data)
        os.chmod(dst, 0o755)
        print(f"{dst}: byte {HEADER_FIELDS[where]} ({where}) of the bundle header flipped")
        return
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    data = bytearray(open(src, "rb").read())
    sec = section(data, "offload_images")
    found = [i for i in images(data, *sec) if i[0] == KINDS[kind]] if sec else []
    if not found:
        print(f"{src}: no {kind} image", file=sys.stderr)
        sys.exit(2)
    _, off, length = found[0]
    at = off + min(int(float(where) * length), max(length - count, 0))
    for i in range(at, min(at + count, off + length)):
        data[i] ^= 0x5A
    open(dst, "wb").write(data)
    os.chmod(dst, 0o755)
    print(f"{dst}: {kind} bytes {at - off}..{at - off + count} of {length} flipped")


if __name__ == "__main__":
    main()
