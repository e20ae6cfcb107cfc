#!/usr/bin/env python3
"""Writes a copy of a binary built by `cargo offload` with bytes of one of its
embedded device images changed, as a damaged download or disk would: the
bundle's offsets and lengths stay valid, so only the image's checksum can
tell (crates/offload-image, format version 2).

    corrupt-image.py IN OUT KIND AT [COUNT]

KIND: cubin or ptx (the first image of that kind); AT: where in the image,
as a fraction 0..1 of its length; COUNT: bytes to flip (default 16).
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


def main():
    src, dst, kind, where = sys.argv[1:5]
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
