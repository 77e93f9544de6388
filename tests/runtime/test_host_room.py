"""The scheduler's host as room for its client-mode drivers (runtime/host_room.py): the machine's
memory and cores, or its container's cgroup limits when lower, less the scheduler's own."""

from __future__ import annotations

import pytest

from sessionsched.runtime.host_room import SCHEDULER_MIB, measure

MEMINFO = "MemTotal:       16777216 kB\nMemFree:         1000 kB\n"  # 16 GiB


CASES = {
    # name: ({cgroup file: content}, expected memory MiB, where it came from)
    "no cgroup files: the machine's memory": ({}, 16384, "host"),
    "cgroup v2 without a limit": ({"memory.max": "max\n", "cpu.max": "max 100000\n"}, 16384,
                                  "host"),
    "cgroup v2 memory.max below the machine's": ({"memory.max": str(4 << 30)}, 4096, "cgroup"),
    "cgroup v2 memory.max above the machine's": ({"memory.max": str(64 << 30)}, 16384, "host"),
    "cgroup v1 limit": ({"memory/memory.limit_in_bytes": str(2 << 30)}, 2048, "cgroup"),
    "cgroup v1 'no limit' (near 2**63)": ({"memory/memory.limit_in_bytes":
                                          "9223372036854771712"}, 16384, "host"),
}


@pytest.mark.parametrize("files, mem_mib, source", CASES.values(), ids=CASES.keys())
def test_memory(tmp_path, files, mem_mib, source):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    host = measure(tmp_path, meminfo)
    assert (host.mem_mib, host.source) == (mem_mib, source)
    assert host.for_drivers.mem_mib == mem_mib - SCHEDULER_MIB


@pytest.mark.parametrize("text, cores", [("150000 100000", 2), ("50000 100000", 1)],
                         ids=["1.5 CPUs: 2 cores", "half a CPU: 1 core"])
def test_a_cpu_quota_below_the_machines_cores(tmp_path, monkeypatch, text, cores):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(8)), raising=False)
    (tmp_path / "cpu.max").write_text(text)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    assert measure(tmp_path, meminfo).cores == cores


def test_this_machine_is_measured():
    host = measure()
    assert host.cores >= 1 and host.mem_mib > SCHEDULER_MIB
    assert "MiB for client-mode drivers" in host.describe()
