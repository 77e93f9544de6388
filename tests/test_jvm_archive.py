"""The suite's class-data-sharing archive (tests/jvm_archive.py) never makes a JVM fail or
speak: built here small (the Spark launcher's own classes, on its jar alone), with the same
code that writes the real one, then used by real JVMs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessionsched.backends.spark_home import spark_home, spark_jars
from tests import jvm_archive

LAUNCHER = "org.apache.spark.launcher.Main"
LAUNCHER_CLASSES = [f"org/apache/spark/launcher/{name}" for name in
                    ("Main", "CommandBuilderUtils", "SparkClassCommandBuilder")]


@pytest.fixture(scope="module")
def small_archive(tmp_path_factory) -> tuple[Path, str]:
    """(archive, its class path): the launcher's classes on the launcher's jar."""
    work = tmp_path_factory.mktemp("jvm-archive")
    (jar,) = spark_jars(spark_home()).glob("spark-launcher_*.jar")
    listed = work / "classes.txt"
    listed.write_text("".join(f"{c}\n" for c in LAUNCHER_CLASSES))
    jvm_archive._dump(work, listed, str(jar))
    return work / "spark.jsa", str(jar)


def launcher_output(options: str) -> subprocess.CompletedProcess:
    """What spark-class reads: the launcher's stdout (the master's command, NUL-separated), on
    the class path spark-class gives it (``jars/*``: not the archive's)."""
    env = {**os.environ, "JAVA_TOOL_OPTIONS": options, "SPARK_HOME": str(spark_home()),
           "SPARK_SCALA_VERSION": "2.13"}  # as bin/load-spark-env.sh sets it
    return subprocess.run([jvm_archive.java_binary(), "-cp", f"{spark_jars(spark_home())}/*",
                           LAUNCHER, "org.apache.spark.deploy.master.Master"],
                          capture_output=True, env=env, timeout=120)


def test_a_jvm_on_the_archives_class_path_maps_it(small_archive):
    archive, classpath = small_archive
    assert jvm_archive.maps(archive, classpath)


def test_a_jvm_on_another_class_path_starts_without_it_and_says_nothing_on_stdout(small_archive):
    archive, classpath = small_archive
    assert not jvm_archive.maps(archive, f"{spark_jars(spark_home())}/*")  # it does not fit
    plain = launcher_output("")
    with_archive = launcher_output(f"-XX:SharedArchiveFile={archive} {jvm_archive.QUIET}")
    assert plain.returncode == with_archive.returncode == 0
    assert with_archive.stdout == plain.stdout
    assert b"Unable to use shared archive" not in with_archive.stdout + with_archive.stderr


def test_a_truncated_archive_is_not_used(small_archive, tmp_path):
    archive, classpath = small_archive
    broken = tmp_path / "broken.jsa"
    broken.write_bytes(archive.read_bytes()[:4096])  # a JVM given this one crashes
    assert not jvm_archive.maps(broken, classpath)


def test_the_suite_uses_none_when_told_off_or_when_none_was_built(monkeypatch, tmp_path):
    monkeypatch.setenv(jvm_archive.DIR_ENV, str(tmp_path))
    assert jvm_archive.java_options() is None  # nothing built in tmp_path
    monkeypatch.setenv(jvm_archive.DISABLE_ENV, "off")
    assert jvm_archive.java_options() is None


def test_the_suite_uses_a_valid_archive_with_its_quiet_option(small_archive, monkeypatch,
                                                                tmp_path):
    archive, classpath = small_archive
    monkeypatch.setenv(jvm_archive.DIR_ENV, str(tmp_path))
    monkeypatch.delenv(jvm_archive.DISABLE_ENV, raising=False)
    placed = jvm_archive.archive_path()
    shutil.copy(archive, placed)
    placed.with_suffix(".classpath").write_text(classpath + "\n")
    assert jvm_archive.java_options() == f"-XX:SharedArchiveFile={placed} -Xlog:cds*=off"


def test_a_jar_with_another_time_unmaps_it_and_the_fixed_time_maps_it_again(tmp_path,
                                                                              monkeypatch):
    """Why fix_jar_times: pip stamps a reinstalled jar with a new time; the archive maps again
    once the jars have the time they had at the dump."""
    home = tmp_path / "pyspark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("")
    (home / "jars").mkdir()
    (original,) = spark_jars(spark_home()).glob("spark-launcher_*.jar")
    jar = home / "jars" / original.name
    shutil.copy(original, jar)
    monkeypatch.setenv("SPARK_HOME", str(home))
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # as if this were the virtualenv
    jvm_archive.fix_jar_times()
    assert jar.stat().st_mtime == jvm_archive.JARS_MTIME
    listed = tmp_path / "classes.txt"
    listed.write_text("".join(f"{c}\n" for c in LAUNCHER_CLASSES))
    jvm_archive._dump(tmp_path, listed, str(jar))
    assert jvm_archive.maps(tmp_path / "spark.jsa", str(jar))
    os.utime(jar)  # a reinstall
    assert not jvm_archive.maps(tmp_path / "spark.jsa", str(jar))
    jvm_archive.fix_jar_times()
    assert jvm_archive.maps(tmp_path / "spark.jsa", str(jar))


def test_jars_outside_the_virtualenv_keep_their_times(tmp_path, monkeypatch):
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("")
    (home / "jars").mkdir()
    jar = home / "jars" / "a.jar"
    jar.write_bytes(b"")
    before = jar.stat().st_mtime
    monkeypatch.setenv("SPARK_HOME", str(home))
    jvm_archive.fix_jar_times()
    assert jar.stat().st_mtime == before


def test_a_build_for_another_copy_of_the_same_spark_uses_the_kept_class_list(monkeypatch,
                                                                             tmp_path):
    """The class list kept by an earlier build (another checkout's .venv: another Spark home)
    is archived on this Spark home's class path; nothing is started to list it again."""
    monkeypatch.setenv(jvm_archive.DIR_ENV, str(tmp_path))
    kept = jvm_archive.class_list_path()
    mark = jvm_archive.SPARK_HOME_MARK
    kept.write_text(f"{mark}/conf:{mark}/jars/*\n" + "".join(f"{c}\n" for c in LAUNCHER_CLASSES))
    monkeypatch.setattr(jvm_archive, "_list_classes", lambda work: pytest.fail("listed again"))
    work = tmp_path / "work"
    work.mkdir()
    listed, classpath = jvm_archive._classes(work, log=lambda line: None)
    home = spark_home().resolve()
    assert classpath == f"{home}/conf:{home}/jars/*"
    assert listed.read_text().split() == LAUNCHER_CLASSES
