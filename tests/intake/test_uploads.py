"""Remote submission's files (intake/uploads.py, remote.py, upload_api.py), in-process on the
offline cluster: stored once per content, refused with one line when wrong or too big, put in
place of the client's paths, removed once no app in memory refers to them."""

from __future__ import annotations

import asyncio
import hashlib
import os

import pytest
from fastapi.testclient import TestClient

from sessionsched.config import UploadsSection
from sessionsched.config import tokens_file as tokens
from sessionsched.intake.uploads import CONTENT, UploadError, UploadStore
from sessionsched.server.app import create_app, referenced_uploads
from tests.support.server_helpers import make_config, wait_until

LIMITS = {"max_file_bytes": 2048, "max_total_bytes": 5000}
APP = b"import sys\nprint('remote app', sys.argv)\n"
DEPS = b"PK fake zip bytes"
DATA = b"a,b\n1,2\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def serve(state_dir, offline_cluster, open_app):
    def make(**sections) -> TestClient:  # .api: the FastAPI app (state: service, uploads, gate)
        config = make_config(state_dir, cluster=offline_cluster,
                             uploads={**LIMITS, **sections.pop("uploads", {})}, **sections)
        return open_app(create_app(config))

    return make


def put(client, data: bytes, name: str | None = None, **kw):
    return client.put(f"/api/v1/uploads/{name or sha(data)}", content=data, **kw)


def uploads_dir(state_dir):
    return state_dir.resolve() / "uploads"


def stored(state_dir) -> list[str]:
    root = uploads_dir(state_dir)
    return sorted(p.name for p in root.iterdir() if len(p.name) == 64) if root.is_dir() else []


def test_stored_once_per_content(serve, state_dir):
    client = serve()
    assert client.get(f"/api/v1/uploads/{sha(APP)}").status_code == 404
    r = put(client, APP)
    assert (r.status_code, r.json()) == (201, {"sha256": sha(APP), "size": len(APP), "new": True})
    r = put(client, APP)
    assert (r.status_code, r.json()["new"]) == (200, False)
    assert client.get(f"/api/v1/uploads/{sha(APP)}").json()["size"] == len(APP)
    assert stored(state_dir) == [sha(APP)]
    content = uploads_dir(state_dir) / sha(APP) / CONTENT
    assert content.read_bytes() == APP and os.stat(content).st_mode & 0o777 == 0o444


def _chunks(data: bytes):
    yield data[:1000]
    yield data[1000:]


REFUSED_UPLOADS = {
    "not a hash": ("abc", APP, {}, 400, "'abc' is not a SHA-256 (64 lower-case hex digits)"),
    "upper-case hex": (sha(APP).upper(), APP, {}, 400, "is not a SHA-256"),
    "bytes that are not the hash": (sha(DATA), APP, {}, 400,
                                    f"the bytes sent have SHA-256 {sha(APP)}, not {sha(DATA)}; "
                                    "nothing stored"),
    "over max_file_bytes by its length": (sha(b"x" * 3000), b"x" * 3000, {}, 413,
                                          "request body over 2048 bytes "
                                          "(uploads.max_file_bytes)"),
    "over max_file_bytes as it streams": (sha(b"y" * 3000), _chunks(b"y" * 3000), {}, 413,
                                          "request body over 2048 bytes "
                                          "(uploads.max_file_bytes)"),
}


@pytest.mark.parametrize("name,body,headers,status,detail", REFUSED_UPLOADS.values(),
                         ids=REFUSED_UPLOADS.keys())
def test_refused_uploads_store_nothing(serve, state_dir, name, body, headers, status, detail):
    client = serve()
    r = client.put(f"/api/v1/uploads/{name}", content=body, headers=headers)
    assert r.status_code == status
    assert detail in r.json()["detail"]
    assert stored(state_dir) == []
    incoming = uploads_dir(state_dir) / ".incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []


def test_full_store_is_507(serve, state_dir):
    client = serve()
    first, second, third = b"1" * 2000, b"2" * 2000, b"3" * 2000
    assert put(client, first).status_code == 201
    assert put(client, second).status_code == 201
    r = put(client, third)
    assert (r.status_code, r.json()["detail"]) == (507, "no room for 2000 bytes: uploads hold "
                                                   "4000 of uploads.max_total_bytes (5000)")
    assert stored(state_dir) == sorted([sha(first), sha(second)])


def submit(client, argv, uploads, cwd="/nowhere/on/this/host", **body):
    return client.post("/api/v1/apps", json={"argv": argv, "cwd": cwd, "uploads": uploads,
                                             **body})


def test_submission_gets_the_stored_paths(serve, state_dir):
    client = serve()
    for data in (APP, DEPS, DATA):
        assert put(client, data).status_code == 201
    argv = ["--py-files", "lib/deps.zip,hdfs:///shared/x.zip", "--files", "file:/home/a/data.csv",
            "--conf", "spark.files=file:/home/a/data.csv", "./job.py", "lib/deps.zip"]
    uploads = {"./job.py": sha(APP), "lib/deps.zip": sha(DEPS),
               "file:/home/a/data.csv": sha(DATA), "same_as_job.py": sha(APP)}
    r = submit(client, [*argv[:-2], "--jars", "same_as_job.py", *argv[-2:]], uploads,
               conf={"spark.submit.pyFiles": "lib/deps.zip,hdfs:///shared/x.zip"})
    assert r.status_code == 201, r.text
    sub = client.api.state.service.registry.get(r.json()["id"])
    root = str(uploads_dir(state_dir))
    job, deps = f"{root}/{sha(APP)}/job.py", f"{root}/{sha(DEPS)}/deps.zip"
    data = f"{root}/{sha(DATA)}/data.csv"
    assert list(sub.argv) == [
        "--py-files", f"{deps},hdfs:///shared/x.zip", "--files", data,
        "--conf", f"spark.files={data}", "--jars", f"{root}/{sha(APP)}/same_as_job.py",
        job, "lib/deps.zip"]  # the app's own arguments are the app's
    assert sub.conf == {"spark.submit.pyFiles": f"{deps},hdfs:///shared/x.zip"}
    assert sub.cwd == f"{root}/{sha(APP)}"
    with open(job, "rb") as f:  # one content, two names, stored once
        assert f.read() == APP
    assert os.stat(job).st_ino == os.stat(f"{root}/{sha(APP)}/same_as_job.py").st_ino
    assert referenced_uploads(client.api.state.service, client.api.state.uploads) == {
        sha(APP), sha(DEPS), sha(DATA)}


def test_from_another_host_with_nothing_local(serve, state_dir):
    """Every file a URI for the cluster: nothing uploaded, and the client's directory, which
    this host has not got, is not held against it."""
    client = serve()
    argv = ["--deploy-mode", "cluster", "--class", "Main", "hdfs:/jobs/app.jar"]
    r = submit(client, argv, {})
    assert r.status_code == 201, r.text
    assert client.api.state.service.registry.get(r.json()["id"]).cwd == str(
        uploads_dir(state_dir))
    r = client.post("/api/v1/apps", json={"argv": argv, "cwd": "/nowhere/on/this/host"})
    assert (r.status_code, r.json()["detail"]) == (
        400, "cwd /nowhere/on/this/host is not a directory on the scheduler's host")


REFUSED_SUBMISSIONS = {
    "never uploaded": ({"job.py": sha(DATA)}, 400,
                       f"no upload {sha(DATA)}: upload the file first "
                       f"(PUT /api/v1/uploads/{sha(DATA)})"),
    "not in argv": ({"job.py": sha(APP), "other.py": sha(APP)}, 400,
                    "uploads: 'other.py' is not the application file nor in --py-files, "
                    "--files or --jars"),
    "a name that is no file": ({"job.py": sha(APP), "lib/..": sha(APP)}, 400,
                               "file name '..' cannot be stored"),
    "not a hash": ({"job.py": "../../etc/passwd"}, 400, "'../../etc/passwd' is not a SHA-256"),
    "too many": ({f"f{i}.py": sha(APP) for i in range(4)}, 400,
                 "4 uploaded files, at most 3 (uploads.max_files)"),
}


@pytest.mark.parametrize("uploads,status,detail", REFUSED_SUBMISSIONS.values(),
                         ids=REFUSED_SUBMISSIONS.keys())
def test_refused_submissions_store_nothing(serve, uploads, status, detail):
    client = serve(uploads={"max_files": 3})
    assert put(client, APP).status_code == 201
    r = submit(client, ["--py-files", "lib/..", "job.py"], uploads)
    assert r.status_code == status
    assert detail in r.json()["detail"]
    assert client.get("/api/v1/apps").json() == []


def test_files_go_when_the_apps_using_them_are_forgotten(serve, state_dir):
    client = serve(server={"retained_ended_apps": 0}, uploads={"orphan_grace_s": 0})
    service, uploads = client.api.state.service, client.api.state.uploads

    def sweep() -> list[str]:
        return uploads.sweep(referenced_uploads(service, uploads))

    for data in (APP, DEPS):
        assert put(client, data).status_code == 201
    first = submit(client, ["--py-files", "deps.zip", "job.py"],
                   {"job.py": sha(APP), "deps.zip": sha(DEPS)}).json()["id"]
    second = submit(client, ["job.py"], {"job.py": sha(APP)}).json()["id"]
    assert sweep() == []
    assert client.post(f"/api/v1/apps/{first}/kill").status_code == 200
    wait_until(lambda: first not in service.registry, 10, "the killed app to be forgotten")
    assert sweep() == [sha(DEPS)]  # the app file is still the second app's
    assert client.post(f"/api/v1/apps/{second}/kill").status_code == 200
    wait_until(lambda: second not in service.registry, 10, "the second app to be forgotten")
    assert sweep() == [sha(APP)]
    assert stored(state_dir) == []
    # Sent again: stored again (the content was gone), and usable.
    assert put(client, APP).status_code == 201
    assert submit(client, ["job.py"], {"job.py": sha(APP)}).status_code == 201


def test_unused_uploads_go_after_the_grace(tmp_path):
    now = [1000.0]
    store = UploadStore(tmp_path / "uploads", UploadsSection(orphan_grace_s=60, **LIMITS),
                        clock=lambda: now[0])

    async def one(data):
        yield data

    assert asyncio.run(store.put(sha(APP), one(APP))) == (len(APP), True)
    now[0] += 59
    assert store.sweep(set()) == []
    assert store.has(sha(APP)) == len(APP)  # a check counts as a use: the grace starts again
    now[0] += 59
    assert store.sweep(set()) == []
    now[0] += 2
    assert store.sweep({sha(APP)}) == []  # referenced: kept whatever its age
    assert store.sweep(set()) == [sha(APP)]
    with pytest.raises(UploadError, match="upload the file first"):
        store.place(sha(APP), "job.py")


def test_auth_applies(serve, tmp_path, state_dir):
    path = tmp_path / "tokens.json"
    alice = tokens.create(path, "alice", "user")
    client = serve(auth={"mode": "tokens", "tokens_file": str(path), "run_as_root": True,
                         "allowed_paths": [str(tmp_path / "only-here")]})
    r = put(client, APP)
    assert (r.status_code, r.json()["detail"]) == (401, (
        "a token is required: send 'Authorization: Bearer TOKEN' (sessionsched --token, "
        "$SESSIONSCHED_TOKEN)"))
    agent = client.api.state.gate.secret_for("app-0001")
    r = put(client, APP, headers={"Authorization": f"Bearer {agent}"})
    assert (r.status_code, r.json()["detail"]) == (
        403, "an agent secret may only report for its own app")
    assert stored(state_dir) == []
    hers = {"Authorization": f"Bearer {alice}"}
    assert put(client, APP, headers=hers).status_code == 201
    # Uploaded files are allowed whatever auth.allowed_paths says.
    r = client.post("/api/v1/apps", headers=hers, json={
        "argv": ["job.py"], "cwd": "/nowhere", "uploads": {"job.py": sha(APP)}})
    assert r.status_code == 201, r.text
    assert r.json()["user"] == "alice"
