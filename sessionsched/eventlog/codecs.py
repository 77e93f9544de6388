"""Spark's event-log compression streams, decoded to the JSON lines they hold.

Spark compresses an event log with its ``CompressionCodec`` (``spark.eventLog.compress=true``,
``spark.eventLog.compression.codec``), and names the file after the codec's short name:
``.lz4``, ``.lzf``, ``.snappy``, ``.zstd`` (Spark's four). Each codec writes its Java
library's own framing around the compressed blocks, which is what is read here:

- ``zstd`` (zstd-jni): standard zstd frames.
- ``lz4`` (lz4-java ``LZ4BlockOutputStream``): blocks of ``"LZ4Block"``, a token (method in
  the high nibble: 0x10 stored, 0x20 LZ4), compressed length, original length and checksum
  (little-endian int32s), then the block; a block of length 0 ends a stream. Streams may follow
  one another (Spark reads them concatenated).
- ``snappy`` (snappy-java ``SnappyOutputStream``): an 8-byte magic ``\\x82SNAPPY\\x00`` and two
  big-endian int32 versions, then blocks of a big-endian int32 length and a raw snappy block.
- ``lzf`` (compress-lzf ``LZFOutputStream``): chunks of ``"ZV"``, a type (0 stored: a uint16
  length; 1 compressed: uint16 compressed and original lengths), then the chunk.

A stream that is cut short or is not of its codec raises ``UnreadableLog`` naming the problem;
the caller names the file and skips it.
"""

from __future__ import annotations

import struct

import cramjam

CODECS = ("lz4", "lzf", "snappy", "zstd")


class UnreadableLog(ValueError):
    """The log cannot be read; the message says why, in a few words."""


def decode(codec: str | None, data: bytes) -> bytes:
    """The plain bytes of ``data`` compressed with ``codec`` (None: plain already)."""
    if codec is None:
        return data
    if codec not in _DECODERS:
        raise UnreadableLog(f"unknown codec {codec!r} (Spark writes {', '.join(CODECS)})")
    return _DECODERS[codec](data)


def _zstd(data: bytes) -> bytes:
    if not data.startswith(b"\x28\xb5\x2f\xfd"):
        raise UnreadableLog("not a zstd stream")
    try:
        return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError:
        raise UnreadableLog("truncated or damaged zstd stream") from None


LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<iii")  # compressed length, original length, checksum
_LZ4_STORED, _LZ4_COMPRESSED = 0x10, 0x20


def _lz4(data: bytes) -> bytes:
    if not data.startswith(LZ4_MAGIC):
        raise UnreadableLog("not an lz4 block stream")
    out: list[bytes] = []
    pos, ended = 0, False
    head = len(LZ4_MAGIC) + 1 + _LZ4_HEADER.size
    while pos < len(data):
        if not data.startswith(LZ4_MAGIC, pos):
            raise UnreadableLog(f"lz4: no block header at byte {pos}")
        if pos + head > len(data):
            raise UnreadableLog("truncated lz4 stream")
        method = data[pos + len(LZ4_MAGIC)] & 0xF0
        clen, olen, _ = _LZ4_HEADER.unpack_from(data, pos + len(LZ4_MAGIC) + 1)
        pos += head
        if clen < 0 or olen < 0 or pos + clen > len(data):
            raise UnreadableLog("truncated lz4 stream")
        ended = olen == 0
        block = data[pos:pos + clen]
        pos += clen
        if ended:
            continue
        if method == _LZ4_STORED:
            out.append(block)
        elif method == _LZ4_COMPRESSED:
            try:
                out.append(bytes(cramjam.lz4.decompress_block(block, output_len=olen)))
            except cramjam.DecompressionError:
                raise UnreadableLog(f"lz4: damaged block at byte {pos - clen}") from None
        else:
            raise UnreadableLog(f"lz4: unknown block method {method:#x}")
    if not ended:
        raise UnreadableLog("truncated lz4 stream (no end block)")
    return b"".join(out)


SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER = len(SNAPPY_MAGIC) + 8  # magic, version, compatible version


def _snappy(data: bytes) -> bytes:
    if not data.startswith(SNAPPY_MAGIC):
        raise UnreadableLog("not a snappy-java stream")
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        if data.startswith(SNAPPY_MAGIC, pos):  # a stream's header (streams may follow)
            pos += _SNAPPY_HEADER
            continue
        if pos + 4 > len(data):
            raise UnreadableLog("truncated snappy stream")
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise UnreadableLog("truncated snappy stream")
        try:
            out.append(bytes(cramjam.snappy.decompress_raw(data[pos:pos + length])))
        except cramjam.DecompressionError:
            raise UnreadableLog(f"snappy: damaged block at byte {pos}") from None
        pos += length
    return b"".join(out)


LZF_MAGIC = b"ZV"


def _lzf(data: bytes) -> bytes:
    if data and not data.startswith(LZF_MAGIC):
        raise UnreadableLog("not an lzf stream")
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        if not data.startswith(LZF_MAGIC, pos) or pos + 5 > len(data):
            raise UnreadableLog(f"truncated or damaged lzf stream at byte {pos}")
        kind = data[pos + 2]
        (length,) = struct.unpack_from(">H", data, pos + 3)
        if kind == 0:
            pos += 5
            chunk = data[pos:pos + length]
            if len(chunk) < length:
                raise UnreadableLog("truncated lzf stream")
            out.append(chunk)
            pos += length
        elif kind == 1:
            if pos + 7 > len(data):
                raise UnreadableLog("truncated lzf stream")
            (olen,) = struct.unpack_from(">H", data, pos + 5)
            pos += 7
            chunk = data[pos:pos + length]
            if len(chunk) < length:
                raise UnreadableLog("truncated lzf stream")
            out.append(lzf_block(chunk, olen))
            pos += length
        else:
            raise UnreadableLog(f"lzf: unknown chunk type {kind}")
    return b"".join(out)


def lzf_block(src: bytes, size: int) -> bytes:
    """One LZF-compressed chunk (liblzf's format) of ``size`` bytes. Pure Python: no
    maintained LZF package ships wheels, and LZF is the least used of Spark's codecs."""
    out = bytearray()
    i, n = 0, len(src)
    try:
        while i < n:
            ctrl = src[i]
            i += 1
            if ctrl < 32:  # a literal run of ctrl + 1 bytes
                out += src[i:i + ctrl + 1]
                i += ctrl + 1
                continue
            length = ctrl >> 5
            if length == 7:
                length += src[i]
                i += 1
            ref = len(out) - ((ctrl & 0x1F) << 8) - src[i] - 1
            i += 1
            length += 2
            if ref < 0:
                raise UnreadableLog("lzf: damaged chunk (a back-reference before its start)")
            if ref + length <= len(out):
                out += out[ref:ref + length]
            else:  # overlapping: the copy repeats what it just wrote
                for k in range(length):
                    out.append(out[ref + k])
    except IndexError:
        raise UnreadableLog("lzf: damaged chunk") from None
    if len(out) != size:
        raise UnreadableLog("lzf: damaged chunk (wrong length)")
    return bytes(out)


_DECODERS = {"zstd": _zstd, "lz4": _lz4, "snappy": _snappy, "lzf": _lzf}
