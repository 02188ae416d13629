"""Writes a .tar.gz of N results (schema roce-gen/result/v1), each padded to 15 MiB: by turns
with spaces after the object, one 15 MiB check message, and one 15 MiB unknown field. What ingest
must read in bounded memory. The run of spaces is compressed once and spliced into each member
(deflate after a full flush is byte-aligned and refers to nothing before it), so the archive is
written in seconds.

usage: make_padded.py N OUT.tar.gz
"""
import json
import struct
import sys
import tarfile
import zlib

PAD = 15 << 20
MARK = "@PAD@"


def main() -> None:
    n, out = int(sys.argv[1]), sys.argv[2]
    spaces = b" " * PAD
    once = zlib.compressobj(1, zlib.DEFLATED, -15)
    pad = once.compress(spaces) + once.flush(zlib.Z_FULL_FLUSH)
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    crc, size = 0, 0
    parts = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"]

    def plain(data: bytes, flush: int) -> None:
        nonlocal crc, size
        crc = zlib.crc32(data, crc)
        size += len(data)
        parts.append(c.compress(data) + c.flush(flush))

    for i in range(n):
        host = f"gpu-{i:05d}"
        doc = {"schema": "roce-gen/result/v1", "host": host, "phase": "apply", "status": "pass",
               "finished_at": "2026-11-30T08:00:00Z",
               "checks": [{"id": "mtu", "status": "pass", "message": "mtu is 4200"}]}
        if i % 3 == 1:
            doc["checks"][0]["message"] = MARK
        elif i % 3 == 2:
            doc["padding"] = MARK
        text = json.dumps(doc) + (MARK if i % 3 == 0 else "")
        pre, post = (s.encode() for s in text.split(MARK))
        length = len(pre) + PAD + len(post)
        info = tarfile.TarInfo(f"results/{host}.apply.json")
        info.size, info.mode = length, 0o644
        plain(info.tobuf(format=tarfile.GNU_FORMAT) + pre, zlib.Z_FULL_FLUSH)
        crc = zlib.crc32(spaces, crc)
        size += PAD
        parts.append(pad)
        plain(post + b"\0" * (-length % 512), zlib.Z_FULL_FLUSH)
    plain(b"\0" * 1024, zlib.Z_FINISH)
    parts.append(struct.pack("<II", crc, size & 0xFFFFFFFF))
    with open(out, "wb") as f:
        f.writelines(parts)


if __name__ == "__main__":
    main()
