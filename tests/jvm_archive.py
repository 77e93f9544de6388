"""Class data sharing for the Spark JVMs the tests start: one archive of Spark's classes, built
once per machine, Spark and JDK, that masters, workers, drivers and executors map at start
instead of reading and verifying ~14k classes out of pyspark's 280 jars.

    python -m tests.jvm_archive           # build it unless a valid one is there (`make test`)
    python -m tests.jvm_archive --check   # say whether the suite would use it

How it is built (``build``, 2-3 min and ~1.5 min of CPU on a loaded 2-core machine; under
a file lock: two builders never race):

1. a real local cluster runs ``LISTING_APP`` (what the suite's apps do: an RDD job of Python
   tasks, a DataFrame aggregation) with ``-XX:DumpLoadedClassList`` on the master, the
   worker, the driver and its executor (``SPARK_MASTER_OPTS``, ``SPARK_WORKER_OPTS``,
   ``spark.{driver,executor}.extraJavaOptions``: each its own list); the class path Spark's
   launcher gives them is read from the master's command line
   (``$SPARK_HOME/conf:.../slf4j-api-*.jar:$SPARK_HOME/jars/*``). The merged list and that
   class path (its Spark home left as a mark) are kept, per pyspark version and JDK
   (``spark-<version>-<hash>.classes``): a build for another copy of the same Spark (a new
   checkout's .venv, whose jars' paths the archive records) skips this step (~25 s);
2. one JVM on that class path loads every listed class (``LOADER_SOURCE``) and writes a
   *dynamic* archive on top of the JDK's own (``-XX:ArchiveClassesAtExit``);
3. ``java -Xshare:on`` maps it (it fails if the archive is unusable); only then is it renamed
   into place, so a half-written archive is never seen (a truncated one crashes the JVM).

Where: ``$SESSIONSCHED_JVM_ARCHIVE_DIR``, else ``$XDG_CACHE_HOME/sessionsched/jvm-archive``
(``~/.cache/...``), as ``spark-<pyspark version>-<hash of the JDK and the jars' directory>.jsa``
beside its class path (``.classpath``). A new pyspark or JDK gets a new file; a build keeps
the ``KEEP`` used last and removes older ones (~150 MB each). The jars of a pyspark in this
virtualenv get one fixed modification time before a build (``fix_jar_times``): the JVM
checks them, and pip stamps them with the install's time, so a new .venv would otherwise
need a new archive.

How the suite uses it (``java_options``, called by ``tests/conftest.py``): when the archive
for this Spark and JDK exists and ``java -Xshare:on`` maps it with its class path,
``-XX:SharedArchiveFile=<it> -Xlog:cds*=off`` joins ``JAVA_TOOL_OPTIONS``; otherwise nothing
changes (no archive is built by a test run). ``SESSIONSCHED_JVM_ARCHIVE=off`` turns it off.

Why it never makes a JVM fail: the JVM's default ``-Xshare:auto`` maps the archive only when
the JVM's class path starts with the archive's (and the jars' sizes and times are unchanged);
otherwise it goes on with the JDK's own archive (the launcher ``org.apache.spark.launcher.Main``
runs on ``jars/*`` alone, ``javac`` on none). It says so with a warning on *stdout*, where
``spark-class`` reads the launcher's command: ``-Xlog:cds*=off`` silences every CDS line.
A JVM with ``hive-jackson/*`` first on its class path (spark-submit's) maps it too: that
entry names no directory and expands to nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DISABLE_ENV = "SESSIONSCHED_JVM_ARCHIVE"  # "off" (or "0", "false", "no"): do not use it
DIR_ENV = "SESSIONSCHED_JVM_ARCHIVE_DIR"
QUIET = "-Xlog:cds*=off"
JARS_MTIME = 946684800  # 2000-01-01 UTC: any fixed time does (fix_jar_times)
SPARK_HOME_MARK = "{spark_home}"  # in a kept class list's class path
KEEP = 4  # archives kept (~150 MB each), the last used: a checkout's, CI's clone and two more

LISTING_APP = """
import time
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(0.1) or x).count()
spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string").groupBy("v").count().collect()
spark.stop()
"""

LOADER_SOURCE = """
import java.nio.file.*;
public class LoadClasses {
  public static void main(String[] args) throws Exception {
    ClassLoader app = ClassLoader.getSystemClassLoader();
    int loaded = 0, missing = 0;
    for (String line : Files.readAllLines(Path.of(args[0]))) {
      try { Class.forName(line.replace('/', '.'), false, app); loaded++; }
      catch (Throwable t) { missing++; }
    }
    System.out.println("LOADED " + loaded + " MISSING " + missing);
  }
}
"""


def disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in ("off", "0", "false", "no")


def cache_dir() -> Path:
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sessionsched" / "jvm-archive"


def java_binary() -> str | None:
    """The java spark-class runs: ``$JAVA_HOME/bin/java``, else the first on PATH."""
    if os.environ.get("JAVA_HOME"):
        return str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    return shutil.which("java")


def _clean_env() -> dict[str, str]:
    """The environment for the JVMs run here: no JAVA_TOOL_OPTIONS (an archive named there
    would be mapped by the very JVM that checks or writes one)."""
    return {k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"}


def _jdk() -> tuple[str, str] | None:
    """What names the JDK in the cache's file names: java's real path and its version text
    (None: no java)."""
    java = java_binary()
    if java is None:
        return None
    try:
        version = subprocess.run([java, "-version"], capture_output=True, text=True,
                                 env=_clean_env(), timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    return os.path.realpath(java), version


def _named(*keys: str, suffix: str) -> Path:
    spark_version = importlib.metadata.version("pyspark")  # importing pyspark takes seconds
    digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:12]
    return cache_dir() / f"spark-{spark_version}-{digest}{suffix}"


def archive_path() -> Path | None:
    """Where the archive for this pyspark, JDK and jars directory lives (None: no java)."""
    from sessionsched.backends.spark_home import spark_home, spark_jars

    jdk = _jdk()
    if jdk is None:
        return None
    return _named(*jdk, str(spark_jars(spark_home()).resolve()), suffix=".jsa")


def class_list_path() -> Path | None:
    """Where the class list for this pyspark and JDK lives: the same classes for every copy
    of them, wherever installed (a new checkout's .venv needs a new archive, not a new list)."""
    jdk = _jdk()
    return None if jdk is None else _named(*jdk, suffix=".classes")


def _classpath_file(archive: Path) -> Path:
    return archive.with_suffix(".classpath")


def maps(archive: Path, classpath: str) -> bool:
    """Whether a JVM on ``classpath`` maps ``archive`` (``-Xshare:on`` fails otherwise)."""
    java = java_binary()
    if java is None or not archive.is_file():
        return False
    try:
        # A broken archive crashes this JVM: its crash report is not kept (no hs_err_pid*.log).
        result = subprocess.run([java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}",
                                 "-XX:ErrorFile=/dev/null", "-XX:-CreateCoredumpOnCrash", "-cp",
                                 classpath, "-version"], capture_output=True, env=_clean_env(),
                                timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def java_options() -> str | None:
    """The options that make a JVM use the archive, when it is there and valid; else None."""
    if disabled():
        return None
    archive = archive_path()
    if archive is None or not archive.is_file() or " " in str(archive):
        return None
    try:
        classpath = _classpath_file(archive).read_text().strip()
    except OSError:
        return None
    if not maps(archive, classpath):
        return None
    with contextlib.suppress(OSError):
        os.utime(_classpath_file(archive))  # last used: the newest KEEP survive a build
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def fix_jar_times() -> None:
    """Give the jars of a pyspark installed in this virtualenv one fixed modification time.

    The JVM maps the archive only while each jar on its class path has the size and the time
    it had at the dump; pip stamps every file with the time of the install, so each
    reinstall (``.ci/run`` starts from a new .venv) would cost a new archive. Jars of a Spark
    elsewhere (``$SPARK_HOME``) are left alone."""
    from sessionsched.backends.spark_home import spark_home, spark_jars

    jars = spark_jars(spark_home()).resolve()
    if not jars.is_relative_to(Path(sys.prefix).resolve()):
        return
    for jar in jars.glob("*.jar"):
        with contextlib.suppress(OSError):
            if jar.stat().st_mtime != JARS_MTIME:
                os.utime(jar, (JARS_MTIME, JARS_MTIME))


def _prune(directory: Path, keep: Path) -> None:
    """Remove all but the KEEP archives used last (``keep`` stays)."""
    others = sorted((p for p in directory.glob("spark-*.classpath")
                     if p != _classpath_file(keep)), key=lambda p: p.stat().st_mtime)
    for stale in others[:max(0, len(others) - (KEEP - 1))]:
        for path in (stale.with_suffix(".jsa"), stale):
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def _locked(directory: Path):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(log=print) -> Path:
    """Build the archive unless a valid one is there; return its path. Raises RuntimeError
    with one line when it cannot."""
    archive = archive_path()
    if archive is None:
        raise RuntimeError("no java found (JAVA_HOME or PATH)")
    with _locked(archive.parent):
        fix_jar_times()
        classpath_file = _classpath_file(archive)
        if classpath_file.is_file() and maps(archive, classpath_file.read_text().strip()):
            log(f"jvm archive: {archive} is valid")
            return archive
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="jvm-archive-") as tmp:
            work = Path(tmp)
            listed, classpath = _classes(work, log)
            _dump(work, listed, classpath)
            if not maps(work / "spark.jsa", classpath):
                raise RuntimeError("the archive just written does not map: not used")
            classpath_file.write_text(classpath + "\n")
            os.replace(work / "spark.jsa", archive)
        _prune(archive.parent, archive)
        log(f"jvm archive: {archive} built in {time.monotonic() - started:.0f} s")
        return archive


def _classes(work: Path, log) -> tuple[Path, str]:
    """The class list to archive and the class path to archive it on: the list kept from an
    earlier build for this Spark and JDK, else listed now (a cluster and an app run, ~25 s)
    and kept. The class path is Spark's launcher's, with this Spark home in it."""
    from sessionsched.backends.spark_home import spark_home

    home = str(spark_home().resolve())
    kept = class_list_path()
    classpath, *classes = (kept.read_text().splitlines()
                           if kept is not None and kept.is_file() else [""])
    if SPARK_HOME_MARK in classpath and classes:
        classpath = classpath.replace(SPARK_HOME_MARK, home)
        log(f"jvm archive: {len(classes)} classes from {kept}; writing the archive")
    else:
        started = time.monotonic()
        classpath = _list_classes(work)
        classes = _merged_list(work)
        log(f"jvm archive: {len(classes)} classes listed "
            f"({time.monotonic() - started:.0f} s); writing the archive")
        if kept is not None and home in classpath:
            staged = kept.with_suffix(".tmp")
            staged.write_text("".join(f"{line}\n" for line in
                                      [classpath.replace(home, SPARK_HOME_MARK), *classes]))
            os.replace(staged, kept)  # whole or not at all
    listed = work / "classes.txt"
    listed.write_text("".join(f"{c}\n" for c in classes))
    return listed, classpath


def _list_classes(work: Path) -> str:
    """Run the master, a worker, a driver and its executor with class lists on; return the
    class path the master ran with."""
    from sessionsched.backends.local import LocalCluster
    from tests.sparkcluster import (
        SMALL,
        conf_args,
        master_ports,
        spark_submit_process,
        started_cluster,
    )

    app = work / "app.py"
    app.write_text(LISTING_APP)
    env = {"SPARK_MASTER_OPTS": f"-XX:DumpLoadedClassList={work / 'master.list'}",
           "SPARK_WORKER_OPTS": f"-XX:DumpLoadedClassList={work / 'worker.list'}"}
    saved = {k: os.environ.get(k) for k in (*env, "JAVA_TOOL_OPTIONS")}
    os.environ.update(env)
    os.environ.pop("JAVA_TOOL_OPTIONS", None)

    def make() -> LocalCluster:
        port, rest_port, ui_port = master_ports()
        return LocalCluster(work / "cluster", workers=1, cores=2, memory="2g", port=port,
                            ui_port=ui_port, rest_port=rest_port, start_timeout_s=180)

    try:
        with started_cluster(make) as cluster:
            cmdline = Path(f"/proc/{cluster.process('master').pid}/cmdline").read_bytes()
            args = cmdline.decode().split("\0")
            classpath = args[args.index("-cp") + 1]
            conf = {**SMALL, "spark.cores.max": "1",
                    "spark.driver.extraJavaOptions":
                        f"-XX:DumpLoadedClassList={work / 'driver.list'}",
                    "spark.executor.extraJavaOptions":
                        f"-XX:DumpLoadedClassList={work / 'executor.list'}"}
            submit = ["--master", cluster.master_url, *conf_args(conf), str(app)]
            with spark_submit_process(submit, work / "driver.log") as popen:
                try:
                    code = popen.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    code = None
            if code != 0:
                tail = (work / "driver.log").read_text(errors="replace").strip()[-300:]
                raise RuntimeError(f"the class-listing app ended with {code}: {tail}")
            # The executor is stopped when its app ends; its list is complete once it is gone.
            _wait_no_executor(cluster, timeout_s=60)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return classpath


def _wait_no_executor(cluster, timeout_s: float) -> None:
    from sessionsched.backends.master import MasterClient

    client = MasterClient(cluster.master_ui)
    deadline = time.monotonic() + timeout_s
    try:
        while client.read().executors and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        client.close()


def _merged_list(work: Path) -> list[str]:
    """The classes of the four lists, once each, in first-loaded order (the lists' lambda
    and invoker lines, ``@...``, are for static archives: left out)."""
    seen: dict[str, None] = {}
    for role in ("master", "worker", "driver", "executor"):
        path = work / f"{role}.list"
        if not path.is_file():
            raise RuntimeError(f"the {role} wrote no class list")
        for line in path.read_text().splitlines():
            if line and not line.startswith(("#", "@")):
                seen.setdefault(line.split()[0], None)
    return list(seen)


def _dump(work: Path, listed: Path, classpath: str) -> None:
    java = java_binary()
    loader = work / "LoadClasses.java"
    loader.write_text(LOADER_SOURCE)
    # The loader runs from source (java File.java): a class directory or jar of its own on the
    # class path would have to stay on every later JVM's class path too.
    with open(work / "dump.log", "wb") as out:
        result = subprocess.run([java, f"-XX:ArchiveClassesAtExit={work / 'spark.jsa'}",
                                 "-cp", classpath, str(loader), str(listed)],
                                stdout=out, stderr=subprocess.STDOUT, env=_clean_env(),
                                timeout=900)
    text = (work / "dump.log").read_text(errors="replace")
    if result.returncode != 0 or "LOADED" not in text:
        raise RuntimeError(f"writing the archive failed ({result.returncode}): "
                           f"{text.strip().splitlines()[-1:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.jvm_archive", description=(
        "Build (or --check) the class-data-sharing archive of Spark's classes the test "
        "suite's JVMs use."))
    parser.add_argument("--check", action="store_true",
                        help="only say whether the suite would use an archive")
    args = parser.parse_args(argv)
    if args.check:
        options = java_options()
        print(f"jvm archive: {'used: ' + options if options else 'not used'}")
        return 0
    if disabled():
        print(f"jvm archive: off ({DISABLE_ENV})")
        return 0
    try:
        build()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        # The suite runs without it, only slower: a failed build does not stop `make test`.
        print(f"jvm archive: not built: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
