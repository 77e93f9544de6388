"""Which logs paths name (single files, rolling log directories, directories of them), and
each one's lines, every part decoded by its name's codec."""

from __future__ import annotations

import pytest
from eventlog_builders import app_log, lz4_stream, text, zstd_stream

from sessionsched.eventlog.codecs import UnreadableLog
from sessionsched.eventlog.files import codec_of, find_logs, read_lines

LINES = app_log()


def _rolling(tmp_path, app_id="app-1", status="appstatus_app-1"):
    d = tmp_path / f"eventlog_v2_{app_id}"
    d.mkdir()
    half = len(LINES) // 2
    # events_2 before events_10 by number, not by name
    (d / f"events_10_{app_id}.zstd").write_bytes(zstd_stream(text(LINES[half:])))
    (d / f"events_2_{app_id}.zstd").write_bytes(zstd_stream(text(LINES[:half])))
    (d / status).write_bytes(b"")
    return d


def test_a_directory_of_single_files_and_rolling_logs(tmp_path):
    (tmp_path / "app-2.lz4").write_bytes(lz4_stream(text(LINES)))
    (tmp_path / "app-3").write_bytes(text(LINES))
    (tmp_path / ".app-3.crc").write_bytes(b"crc")
    rolling = _rolling(tmp_path)
    found, missing = find_logs([tmp_path, tmp_path / "gone"])
    assert [s.path.name for s in found] == ["app-2.lz4", "app-3", rolling.name]
    assert missing == [f"{tmp_path / 'gone'}: no such file or directory"]
    assert [p.name for p in found[2].parts] == ["events_2_app-1.zstd", "events_10_app-1.zstd"]
    for source in found:
        assert read_lines(source) == LINES


def test_a_rolling_directory_named_itself(tmp_path):
    rolling = _rolling(tmp_path)
    (source,), _ = find_logs([rolling])
    assert read_lines(source) == LINES


def test_a_rolling_log_still_running_is_refused(tmp_path):
    (source,), _ = find_logs([_rolling(tmp_path, status="appstatus_app-1.inprogress")])
    with pytest.raises(UnreadableLog, match="still running"):
        read_lines(source)


NAMES = {
    "app-1": None, "app-1_1": None, "local-1700000000000.zstd": "zstd", "app-1.lz4": "lz4",
    "app-1.lzf": "lzf", "app-1.snappy": "snappy", "events.json": None,
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_codec_of_a_name(name):
    assert codec_of(name) == NAMES[name]


@pytest.mark.parametrize("name,why", [("app-1.lz4.inprogress", "still being written"),
                                      ("app-1.gz", "unknown codec 'gz'")])
def test_names_refused(name, why):
    with pytest.raises(UnreadableLog, match=why):
        codec_of(name)
