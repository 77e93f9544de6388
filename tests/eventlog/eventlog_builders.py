"""Small hand-made Spark event logs for the eventlog tests: the JSON lines of one app, and the
compressed streams Spark's codecs frame them in (the Java libraries' framing, written here the
way tests/eventlog/test_codecs.py reads it back).

``app_log(name="etl", props={...}, stages=[stage(0, [1000, 2000]), stage(1, [500], parents=[0])])``
-> the lines of one app's log: log start, environment, app start, executors, one job with
the stages (submitted, each task's end, completed), app end.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import cramjam

T0 = 1_700_000_000_000  # the first app's start, ms


def stage(stage_id: int, task_ms: list[int], parents: list[int] | None = None,
          tasks: int | None = None, name: str = "", gap_ms: int = 0) -> dict[str, Any]:
    """``gap_ms``: the driver's own work before it is submitted (after the stage before)."""
    return {"id": stage_id, "task_ms": task_ms, "parents": parents or [],
            "tasks": len(task_ms) if tasks is None else tasks, "name": name or f"s{stage_id}",
            "gap_ms": gap_ms}


def app_log(name: str = "app", app_id: str = "app-1", user: str = "alice", start: int = T0,
            props: dict[str, str] | None = None, stages: list[dict] | None = None,
            executors: list[tuple[str, str, int]] | None = None, end: int | None = None,
            exit_code: int | None = 0, first_stage_at: int = 2000) -> list[str]:
    """``executors``: (id, host, cores), added at start + 1 s, held to the end."""
    stages = [stage(0, [1000, 1000])] if stages is None else stages
    executors = [("1", "host-a", 2)] if executors is None else executors
    ev: list[dict] = [
        {"Event": "SparkListenerLogStart", "Spark Version": "4.0.1"},
        {"Event": "SparkListenerEnvironmentUpdate",
         "Spark Properties": {"spark.app.name": name, **(props or {})}},
        {"Event": "SparkListenerApplicationStart", "App Name": name, "App ID": app_id,
         "Timestamp": start, "User": user},
    ]
    ev += [{"Event": "SparkListenerExecutorAdded", "Timestamp": start + 1000, "Executor ID": eid,
            "Executor Info": {"Host": host, "Total Cores": cores}}
           for eid, host, cores in executors]
    at = start + first_stage_at
    ev.append({"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": at})
    for s in stages:
        at += s.get("gap_ms", 0)
        info = {"Stage ID": s["id"], "Stage Attempt ID": 0, "Stage Name": s["name"],
                "Number of Tasks": s["tasks"], "Parent IDs": s["parents"]}
        ev.append({"Event": "SparkListenerStageSubmitted", "Stage Info": {
            **info, "Submission Time": at}})
        for index, ms in enumerate(s["task_ms"]):
            ev.append({"Event": "SparkListenerTaskEnd", "Stage ID": s["id"],
                       "Stage Attempt ID": 0, "Task End Reason": {"Reason": "Success"},
                       "Task Info": {"Index": index, "Launch Time": at,
                                     "Finish Time": at + ms, "Failed": False,
                                     "Killed": False}})
        at += max(s["task_ms"], default=0)
        ev.append({"Event": "SparkListenerStageCompleted", "Stage Info": {
            **info, "Submission Time": at - max(s["task_ms"], default=0),
            "Completion Time": at}})
    end_event: dict[str, Any] = {"Event": "SparkListenerApplicationEnd",
                                 "Timestamp": end if end is not None else at + 1000}
    if exit_code is not None:
        end_event["ExitCode"] = exit_code
    ev.append(end_event)
    return [json.dumps(e) for e in ev]


def text(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def lz4_stream(data: bytes, block: int = 64, stored: bool = False) -> bytes:
    """lz4-java's LZ4BlockOutputStream framing (checksums 0: the reader does not check them)."""
    out = b""
    for i in range(0, len(data), block):
        chunk = data[i:i + block]
        body = chunk if stored else bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        method = 0x10 if stored else 0x20
        out += b"LZ4Block" + bytes([method]) + struct.pack("<iii", len(body), len(chunk), 0)
        out += body
    return out + b"LZ4Block" + bytes([0x10]) + struct.pack("<iii", 0, 0, 0)


def snappy_stream(data: bytes, block: int = 64) -> bytes:
    """snappy-java's SnappyOutputStream framing."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(data), block):
        body = bytes(cramjam.snappy.compress_raw(data[i:i + block]))
        out += struct.pack(">i", len(body)) + body
    return out


def lzf_stream(data: bytes, block: int = 64) -> bytes:
    """compress-lzf's LZFOutputStream framing, every chunk stored (type 0)."""
    out = b""
    for i in range(0, len(data), block):
        chunk = data[i:i + block]
        out += b"ZV\x00" + struct.pack(">H", len(chunk)) + chunk
    return out


def lzf_compressed_chunk(body: bytes, size: int) -> bytes:
    return b"ZV\x01" + struct.pack(">HH", len(body), size) + body


def zstd_stream(data: bytes) -> bytes:
    return bytes(cramjam.zstd.compress(data))


STREAMS = {"lz4": lz4_stream, "snappy": snappy_stream, "lzf": lzf_stream, "zstd": zstd_stream}
