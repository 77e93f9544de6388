"""Spark's event-log codecs decoded from their Java libraries' framing (streams made in
tests/eventlog/eventlog_builders.py; tests/real_spark/test_eventlog_workload.py reads streams
real Spark wrote); a stream cut short or of another codec is refused with a reason."""

from __future__ import annotations

import pytest
from eventlog_builders import (
    STREAMS,
    app_log,
    lz4_stream,
    lzf_compressed_chunk,
    lzf_stream,
    snappy_stream,
    text,
    zstd_stream,
)

from sessionsched.eventlog.codecs import UnreadableLog, decode, lzf_block

DATA = text(app_log())


@pytest.mark.parametrize("codec", sorted(STREAMS))
def test_each_codec_gives_back_the_lines(codec):
    assert decode(codec, STREAMS[codec](DATA)) == DATA


def test_plain_is_read_as_it_is():
    assert decode(None, DATA) == DATA


def test_lz4_stored_blocks_and_streams_one_after_another():
    two = lz4_stream(DATA[:100], stored=True) + lz4_stream(DATA[100:])
    assert decode("lz4", two) == DATA


def test_snappy_streams_one_after_another():
    assert decode("snappy", snappy_stream(DATA[:70]) + snappy_stream(DATA[70:])) == DATA


def test_lzf_compressed_chunk_with_an_overlapping_back_reference():
    # "abc" as a literal run, then 6 bytes copied from 3 back: the copy overlaps itself
    body = bytes([2]) + b"abc" + bytes([0x80, 2])
    assert lzf_block(body, 9) == b"abcabcabc"
    stream = lzf_stream(b"x-") + lzf_compressed_chunk(body, 9)
    assert decode("lzf", stream) == b"x-abcabcabc"


def test_lzf_long_back_reference():
    # a literal "ab", then a copy of 7 + 3 + 2 = 12 bytes from 2 back
    body = bytes([1]) + b"ab" + bytes([0xE0, 3, 1])
    assert lzf_block(body, 14) == b"ab" * 7


CUT = [
    ("lz4", lambda: lz4_stream(DATA)[:-21], "truncated lz4 stream (no end block)"),
    ("lz4", lambda: lz4_stream(DATA)[:50], "truncated lz4 stream"),
    ("snappy", lambda: snappy_stream(DATA)[:40], "truncated snappy stream"),
    ("lzf", lambda: lzf_stream(DATA)[:30], "truncated lzf stream"),
    ("zstd", lambda: zstd_stream(DATA)[:-8], "truncated or damaged zstd stream"),
]


@pytest.mark.parametrize("codec,make,why", CUT, ids=[f"{c}-{i}" for i, (c, _, _) in
                                                     enumerate(CUT)])
def test_a_stream_cut_short_is_refused(codec, make, why):
    with pytest.raises(UnreadableLog) as e:
        decode(codec, make())
    assert str(e.value) == why


FOREIGN = [
    ("lz4", "not an lz4 block stream"),
    ("snappy", "not a snappy-java stream"),
    ("lzf", "not an lzf stream"),
    ("zstd", "not a zstd stream"),
    ("gz", "unknown codec 'gz' (Spark writes lz4, lzf, snappy, zstd)"),
]


@pytest.mark.parametrize("codec,why", FOREIGN, ids=[c for c, _ in FOREIGN])
def test_a_stream_of_another_kind_is_refused(codec, why):
    with pytest.raises(UnreadableLog) as e:
        decode(codec, DATA)
    assert str(e.value) == why


def test_a_damaged_lzf_chunk_is_refused():
    with pytest.raises(UnreadableLog):
        lzf_block(bytes([0x80, 200]), 8)  # a back-reference before the chunk's start
