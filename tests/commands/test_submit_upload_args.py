"""What `sessionsched submit` uploads for a server on another host, and when."""

from __future__ import annotations

import argparse

import pytest

from sessionsched.cli import UserError
from sessionsched.commands.submit import local_files, plan_submission, wants_upload

WHEN = {
    "loopback address": (None, "http://127.0.0.1:6066", False),
    "localhost": (None, "https://localhost:6066", False),
    "IPv6 loopback": (None, "http://[::1]:6066", False),
    "another host's name": (None, "https://sched.example.org:6066", True),
    "another host's address": (None, "http://10.1.2.3:6066", True),
    "--upload to a local server": (True, "http://127.0.0.1:6066", True),
    "--no-upload to a remote one (a shared disk)": (False, "http://10.1.2.3:6066", False),
}


@pytest.mark.parametrize("choice,server,expected", WHEN.values(), ids=WHEN.keys())
def test_when_files_are_uploaded(choice, server, expected):
    assert wants_upload(choice, server) is expected


def wrapper() -> argparse.Namespace:
    return argparse.Namespace(queue=None, priority=None)


@pytest.fixture
def laptop(tmp_path):
    (tmp_path / "lib").mkdir()
    for name in ("job.py", "lib/deps.zip", "data.csv", "extra.jar", "more.py"):
        (tmp_path / name).write_text(name)
    (tmp_path / "job.properties").write_text("spark.submit.pyFiles=more.py\n")
    return tmp_path


def test_local_files_and_no_properties_file(laptop):
    argv = ["--properties-file", "job.properties", "--py-files", "lib/deps.zip,hdfs:///x.zip",
            "--files", f"file:{laptop}/data.csv", "--jars", "local:/opt/x.jar,extra.jar",
            "job.py", "--py-files", "not-ours.py"]
    sub = plan_submission(wrapper(), argv, {}, str(laptop), remote=True)
    assert "--properties-file" not in sub.argv  # its properties travel resolved, in conf
    assert sub.argv[-3:] == ("job.py", "--py-files", "not-ours.py")
    assert local_files(sub) == {
        "job.py": laptop / "job.py", "lib/deps.zip": laptop / "lib/deps.zip",
        f"file:{laptop}/data.csv": laptop / "data.csv", "extra.jar": laptop / "extra.jar"}
    # A properties file's list is uploaded too (--py-files from argv wins over it here).
    sub = plan_submission(wrapper(), ["--properties-file", "job.properties", "job.py"], {},
                          str(laptop), remote=True)
    assert set(local_files(sub)) == {"job.py", "more.py"}


def test_a_missing_or_directory_file_is_refused_here(laptop):
    sub = plan_submission(wrapper(), ["--files", "lib", "job.py"], {}, str(laptop), remote=True)
    with pytest.raises(UserError, match=r"^--files lib is not a file here \(.*/lib\); only "
                                        r"files are uploaded$"):
        local_files(sub)
