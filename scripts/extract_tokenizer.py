#!/usr/bin/env python3
"""Extract the metadata of a GGUF file into a small GGUF with no tensors (tokenizer fixture).

usage: extract_tokenizer.py IN.gguf OUT.gguf[.gz] [--all] [--pre=NAME]

Keeps general.architecture, general.name, every tokenizer.* key and the scalar hyper-parameters
(`<arch>.*` scalars: llama.cpp's vocab_only loader still reads them), drops tensors. The KV bytes are
copied verbatim, so value types and float scores stay bit-exact. Only the header is read, so IN may be
a truncated file (e.g. the first chunk of a split model) as long as it holds the whole KV section.
Output ending in .gz is gzip-compressed (mtime 0, so the bytes are reproducible). --pre=NAME replaces
tokenizer.ggml.pre (tests run one vocabulary under every pre-tokenizer family that way).

Format source: ggml/docs/gguf.md (magic, u32 version, u64 n_tensors, u64 n_kv, kv pairs, alignment).
"""
import gzip
import struct
import sys

from gguf import GGUF_MAGIC, GGUFValueType

_FIXED = {
    GGUFValueType.UINT8: 1, GGUFValueType.INT8: 1, GGUFValueType.UINT16: 2, GGUFValueType.INT16: 2,
    GGUFValueType.UINT32: 4, GGUFValueType.INT32: 4, GGUFValueType.FLOAT32: 4, GGUFValueType.BOOL: 1,
    GGUFValueType.UINT64: 8, GGUFValueType.INT64: 8, GGUFValueType.FLOAT64: 8,
}


def _skip_value(buf, off, vtype):
    """Return the offset just past a value of type vtype starting at off."""
    vtype = GGUFValueType(vtype)
    if vtype in _FIXED:
        return off + _FIXED[vtype]
    if vtype == GGUFValueType.STRING:
        (n,) = struct.unpack_from("<Q", buf, off)
        return off + 8 + n
    if vtype == GGUFValueType.ARRAY:
        etype, count = struct.unpack_from("<IQ", buf, off)
        off += 12
        if GGUFValueType(etype) in _FIXED:
            return off + count * _FIXED[GGUFValueType(etype)]
        for _ in range(count):
            off = _skip_value(buf, off, etype)
        return off
    raise ValueError(f"bad gguf value type {vtype}")


def _str_kv(key, value):
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", GGUFValueType.STRING, len(v)) + v


def extract(src, dst, keep_all=False, pre=None):
    with open(src, "rb") as f:
        buf = f.read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<IIQQ", buf, 0)
    if magic != GGUF_MAGIC or version not in (2, 3):
        raise ValueError(f"{src}: not a GGUF v2/v3 file")
    off = 24
    kvs = []  # (key, raw bytes of the whole kv pair)
    arch = None
    for _ in range(n_kv):
        start = off
        (klen,) = struct.unpack_from("<Q", buf, off)
        key = buf[off + 8:off + 8 + klen].decode()
        off += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, off)
        vstart = off + 4
        off = _skip_value(buf, vstart, vtype)
        if off > len(buf):
            raise ValueError(f"{src}: truncated inside key {key}")
        if key == "general.architecture":
            (n,) = struct.unpack_from("<Q", buf, vstart)
            arch = buf[vstart + 8:vstart + 8 + n].decode()
        kvs.append((key, vtype, buf[start:off]))
    keep = []
    for key, vtype, raw in kvs:
        if (keep_all or key in ("general.architecture", "general.name") or key.startswith("tokenizer.")
                or (arch and key.startswith(arch + ".") and vtype != GGUFValueType.ARRAY)):
            if key == "general.alignment":
                continue  # no tensors: the default alignment is fine
            if key == "tokenizer.ggml.pre" and pre is not None:
                raw = _str_kv(key, pre)
            keep.append(raw)
    out = struct.pack("<IIQQ", GGUF_MAGIC, 3, 0, len(keep)) + b"".join(keep)
    out += b"\0" * ((-len(out)) % 32)  # pad to the default alignment: empty data section
    if dst.endswith(".gz"):
        with open(dst, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as g:
            g.write(out)
    else:
        with open(dst, "wb") as f:
            f.write(out)
    print(f"{dst}: {len(keep)} keys, {len(out)} bytes uncompressed")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    pre = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--pre=")), None)
    extract(args[0], args[1], keep_all="--all" in sys.argv, pre=pre)
