"""Properties files (``--properties-file``, spark-defaults.conf) read as spark-submit reads
them, held to Java itself.

spark-submit 4.0.1 reads one with ``Utils.getPropertiesFromFile``: ``java.util.Properties.load``
over the file decoded as UTF-8, each value then trimmed by ``Utils.trimExceptCRLF``. Each case
below is a file's bytes and what that makes of them, as Java 17 printed it. Three readers are
held to the table: sessionsched's; Java's (PropertiesOracle.java beside this file, compiled into
a temporary folder by the test); and, with pyspark's jars, Spark's own getPropertiesFromFile.
Random files over the awkward characters are then read by sessionsched and by Java alike.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessionsched.spark.submit_args import SparkArgsError, read_properties_file
from tests.support.cli_helpers import run_cli

ORACLE = Path(__file__).with_name("PropertiesOracle.java")
JAVA_MALFORMED = "java.lang.IllegalArgumentException: Malformed \\uxxxx encoding."


@dataclass(frozen=True)
class Malformed:
    """Java refuses the file ("Malformed \\uxxxx encoding."); the escape is on this line."""

    line: int


CASES: dict[str, tuple[bytes, dict[str, str] | Malformed]] = {
    "LF ends a line": (b"spark.a=1\nspark.b=2", {"spark.a": "1", "spark.b": "2"}),
    "CR alone ends a line": (b"spark.a=1\rspark.b=2", {"spark.a": "1", "spark.b": "2"}),
    "CRLF ends a line once": (b"spark.a=1\r\nspark.b=2", {"spark.a": "1", "spark.b": "2"}),
    "LF CR is two line ends": (b"spark.a=1\n\rspark.b=2", {"spark.a": "1", "spark.b": "2"}),
    "form feed inside a value": (b"spark.a=x\x0cy", {"spark.a": "x\x0cy"}),
    "vertical tab inside a value": (b"spark.a=x\x0by", {"spark.a": "x\x0by"}),
    "NEL U+0085 inside a value": (b"spark.a=x\xc2\x85y", {"spark.a": "x\x85y"}),
    "LINE SEPARATOR U+2028 inside a value": (b"spark.a=x\xe2\x80\xa8y", {"spark.a": "x\u2028y"}),
    "PARAGRAPH SEPARATOR U+2029 inside a value": (
        b"spark.a=x\xe2\x80\xa9y",
        {"spark.a": "x\u2029y"},
    ),
    "file separator 0x1c inside a value": (b"spark.a=x\x1cy", {"spark.a": "x\x1cy"}),
    "form feed separates key and value": (b"spark.a\x0c1", {"spark.a": "1"}),
    "form feed is leading whitespace": (b"\x0c \tspark.a=1", {"spark.a": "1"}),
    "vertical tab is no whitespace": (b"\x0bspark.a=1", {"\x0bspark.a": "1"}),
    "continuation skips the next line's leading whitespace": (
        b"spark.a=x\\\n \t\x0cy",
        {"spark.a": "xy"},
    ),
    "continuation keeps the first line's trailing whitespace": (
        b"spark.a=x \\\n  y",
        {"spark.a": "x y"},
    ),
    "continuation over CRLF": (
        b"spark.a=x\\\r\n  y\r\nspark.b=2",
        {"spark.a": "xy", "spark.b": "2"},
    ),
    "continuation over CR": (b"spark.a=x\\\r  y\rspark.b=2", {"spark.a": "xy", "spark.b": "2"}),
    "blank line after a continuation ends the line": (
        b"spark.a=x\\\n\nspark.b=2",
        {"spark.a": "x", "spark.b": "2"},
    ),
    "CR CR after a continuation: the second ends the line": (
        b"spark.a=x\\\r\r\nspark.b=2",
        {"spark.a": "x", "spark.b": "2"},
    ),
    "whitespace-only line after a continuation ends the line": (
        b"spark.a=x\\\n   \nspark.b=2",
        {"spark.a": "x", "spark.b": "2"},
    ),
    "continuation across several lines": (b"spark.a=x\\\n  y\\\n  z", {"spark.a": "xyz"}),
    "two trailing backslashes: one backslash, no continuation": (
        b"spark.a=x\\\\\nspark.b=2",
        {"spark.a": "x\\", "spark.b": "2"},
    ),
    "three trailing backslashes: one backslash and a continuation": (
        b"spark.a=x\\\\\\\n  y",
        {"spark.a": "x\\y"},
    ),
    "four trailing backslashes: two backslashes": (
        b"spark.a=x\\\\\\\\\nspark.b=2",
        {"spark.a": "x\\\\", "spark.b": "2"},
    ),
    "continuation at the end of the file is dropped": (b"spark.a=x\\", {"spark.a": "x"}),
    "continuation then the end of the file": (b"spark.a=x\\\n", {"spark.a": "x"}),
    "backslash-only line at the end: an empty key": (b"spark.a=1\n\\", {"": "", "spark.a": "1"}),
    "backslash-only line then a blank line: nothing": (b"spark.a=1\n\\\n\n", {"spark.a": "1"}),
    "comments with # and ! after whitespace": (b"# c\n  ! c\n\t#c\nspark.a=1", {"spark.a": "1"}),
    "a comment's trailing backslash does not continue it": (b"# c\\\nspark.a=1", {"spark.a": "1"}),
    "a comment ending in CRLF": (b"# c\r\nspark.a=1", {"spark.a": "1"}),
    "a comment at the end without a line end": (b"spark.a=1\n# end", {"spark.a": "1"}),
    "# after a continued empty line starts a comment": (
        b"\\\n#spark.a=1\nspark.b=2",
        {"spark.b": "2"},
    ),
    "# inside a continued line is text": (b"spark.a=x\\\n#y", {"spark.a": "x#y"}),
    "# after the separator is text": (b"spark.a=#1 ! 2", {"spark.a": "#1 ! 2"}),
    "a malformed \\u in a comment is ignored": (b"# \\u12\nspark.a=1", {"spark.a": "1"}),
    "separator =": (b"spark.a=1", {"spark.a": "1"}),
    "separator :": (b"spark.a:1", {"spark.a": "1"}),
    "separator space": (b"spark.a 1", {"spark.a": "1"}),
    "separator tab": (b"spark.a\t1", {"spark.a": "1"}),
    "spaces around =": (b"spark.a  =  1", {"spark.a": "1"}),
    "tab, = and tab": (b"spark.a\t=\t1", {"spark.a": "1"}),
    "only the first = is a separator": (b"spark.a = = 1", {"spark.a": "= 1"}),
    "= then : keeps the :": (b"spark.a=:1", {"spark.a": ":1"}),
    ": then = keeps the =": (b"spark.a:=1", {"spark.a": "=1"}),
    "whitespace then : is one separator": (b"spark.a :1", {"spark.a": "1"}),
    "separator in the value is text": (b"spark.a=b=c:d e", {"spark.a": "b=c:d e"}),
    "escaped separators in the key": (b"a\\=b\\:c\\ d\\\te=1", {"a=b:c d\te": "1"}),
    "escaped backslash before a separator": (b"a\\\\=1", {"a\\": "1"}),
    "escaped # starts a key": (b"\\#a=1", {"#a": "1"}),
    "escapes \\t \\n \\r \\f inside a value": (
        b"spark.a=1\\t2\\n3\\r4\\f5",
        {"spark.a": "1\t2\n3\r4\x0c5"},
    ),
    "backslash before any other char is that char": (
        b"spark.a=\\q\\\\\\\"\\'\\z",
        {"spark.a": "q\\\"'z"},
    ),
    "escaped leading space is trimmed by Spark": (b"spark.a=\\ \\ x", {"spark.a": "x"}),
    "escaped trailing tab and form feed are trimmed by Spark": (
        b"spark.a=x\\t\\f",
        {"spark.a": "x"},
    ),
    "escaped trailing CR and LF survive Spark's trim": (
        b"spark.a=\\nx\\r\\n",
        {"spark.a": "\nx\r\n"},
    ),
    "control characters at the ends are trimmed": (
        b"spark.a=\x01\x1fx\x00\x7f",
        {"spark.a": "x\x00\x7f"},
    ),
    "\\u0000 at the end is trimmed": (b"spark.a=x\\u0000", {"spark.a": "x"}),
    "no-break space and NEL at the ends are kept": (
        b"spark.a=\xc2\xa0x\xc2\x85",
        {"spark.a": "\xa0x\x85"},
    ),
    "\\uXXXX in either case": (b"spark.\\u00e9=\\u00E9\\u0041", {"spark.é": "éA"}),
    "\\uD83D\\uDE00: a UTF-16 pair, one character": (b"spark.a=\\uD83D\\uDE00", {"spark.a": "😀"}),
    "a lone surrogate escape is kept": (b"spark.a=\\uD800x", {"spark.a": "\ud800x"}),
    "\\U is no unicode escape": (b"spark.a=\\U0041", {"spark.a": "U0041"}),
    "\\u split by a continuation": (b"spark.a=\\u00\\\n  41", {"spark.a": "A"}),
    "malformed \\u: three digits at the end": (b"spark.a=\\u123", Malformed(line=1)),
    "malformed \\u: not hex": (b"spark.a=\\u12G4", Malformed(line=1)),
    "malformed \\u: a sign": (b"spark.a=\\u+123", Malformed(line=1)),
    "malformed \\u: a space": (b"spark.a=\\u 123", Malformed(line=1)),
    "malformed \\u: nothing after it": (b"spark.a=\\u", Malformed(line=1)),
    "malformed \\u in the key": (b"spark.\\u00=1", Malformed(line=1)),
    "malformed \\u after good lines": (
        b"spark.a=1\nspark.b=2\n\nspark.c=\\uzzzz",
        Malformed(line=4),
    ),
    "malformed \\u after comments (CRLF)": (b"# c\r\n! d\r\nspark.a=\\u12", Malformed(line=3)),
    # the line named is the one the logical line starts on
    "malformed \\u on a continued line": (b"spark.a=1\nspark.b=x\\\n  \\u12", Malformed(line=2)),
    "empty key with =": (b"=x", {"": "x"}),
    "empty key with :": (b" :x", {"": "x"}),
    "key without a value": (b"spark.a", {"spark.a": ""}),
    "key and trailing whitespace": (b"spark.a  \t", {"spark.a": ""}),
    "key and = only": (b"spark.a=", {"spark.a": ""}),
    "whitespace-only value": (b"spark.a=   ", {"spark.a": ""}),
    "inner whitespace kept, ends trimmed": (b"spark.a =  1  2  ", {"spark.a": "1  2"}),
    "duplicate keys: the last wins": (
        b"spark.a=1\nspark.b=x\nspark.a=2",
        {"spark.a": "2", "spark.b": "x"},
    ),
    "UTF-8 text": (b"spark.\xc3\xa9=\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80", {"spark.é": "ü€😀"}),
    "a BOM is part of the first key": (
        b"\xef\xbb\xbfspark.a=1\nspark.b=2",
        {"spark.b": "2", "\ufeffspark.a": "1"},
    ),
    "invalid UTF-8 byte: U+FFFD": (b"spark.a=caf\xe9", {"spark.a": "caf�"}),
    "truncated UTF-8 sequence: one U+FFFD": (b"spark.a=\xe2\x82", {"spark.a": "�"}),
    "UTF-8-encoded surrogate: one U+FFFD": (b"spark.a=\xed\xa0\x80x", {"spark.a": "�x"}),
    "overlong UTF-8: U+FFFD per byte": (b"spark.a=\xc0\x80", {"spark.a": "��"}),
    "empty file": (b"", {}),
    "only blank lines and comments": (b"\n\n  \r\n#x\n!y\n", {}),
}


def _read(path: Path) -> dict[str, str] | str:
    try:
        return read_properties_file(path)
    except SparkArgsError as e:
        return str(e)


@pytest.mark.parametrize("data,expected", CASES.values(), ids=CASES.keys())
def test_sessionsched_reads_as_spark_submit(tmp_path, data, expected):
    path = tmp_path / "case.conf"
    path.write_bytes(data)
    got = _read(path)
    if isinstance(expected, Malformed):
        assert isinstance(got, str), got
        assert got.startswith(f"properties file {path}, line {expected.line}: malformed \\uxxxx")
        assert "\n" not in got
    else:
        assert got == expected


def _tool(name: str) -> str | None:
    """A JDK tool: ``$JAVA_HOME/bin`` first, else PATH (as Spark's scripts find java)."""
    if os.environ.get("JAVA_HOME"):
        return str(Path(os.environ["JAVA_HOME"]) / "bin" / name)
    return shutil.which(name)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """Runs PropertiesOracle over files: ``oracle(paths, classpath=())`` -> one answer each
    ({"props": ...} or {"error": ...}) from a single JVM."""
    javac, java = _tool("javac"), _tool("java")
    if not (javac and java and Path(javac).exists()):
        pytest.skip("no JDK (javac) here: Java's own reading cannot be compared")
    classes = tmp_path_factory.mktemp("oracle")
    subprocess.run([javac, "-d", str(classes), str(ORACLE)], check=True, timeout=120)

    def run(paths: list[Path], *args: str, classpath: tuple[str, ...] = ()) -> list[dict]:
        cp = os.pathsep.join([str(classes), *classpath])
        out = subprocess.run(
            [java, "-cp", cp, "PropertiesOracle", *args, *map(str, paths)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        answers = [json.loads(line) for line in out.splitlines()]
        assert len(answers) == len(paths), out
        return answers

    return run


@pytest.fixture(scope="module")
def case_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cases")
    files = {}
    for number, (case, (data, _)) in enumerate(CASES.items()):
        files[case] = folder / f"case{number}.conf"
        files[case].write_bytes(data)
    return files


def _answers(answers: list[dict], case_files: dict[str, Path]) -> dict[str, dict[str, str] | str]:
    """Each case's answer as the table writes it: the properties, or Java's error."""
    return {
        case: answer["props"] if "props" in answer else answer["error"]
        for case, answer in zip(case_files, answers, strict=True)
    }


@pytest.fixture(scope="module")
def java_answers(oracle, case_files):
    return _answers(oracle(list(case_files.values())), case_files)


@pytest.fixture(scope="module")
def spark_answers(oracle, case_files):
    """Spark's own Utils.getPropertiesFromFile, from pyspark's jars."""
    pyspark = pytest.importorskip("pyspark")
    jars = Path(pyspark.__file__).parent / "jars"
    if not list(jars.glob("spark-core_*.jar")):
        pytest.skip(f"no spark-core jar in {jars}")
    answers = oracle(list(case_files.values()), "--spark", classpath=(str(jars / "*"),))
    return _answers(answers, case_files)


def _as_java_says(expected: dict[str, str] | Malformed) -> dict[str, str] | str:
    return JAVA_MALFORMED if isinstance(expected, Malformed) else expected


@pytest.mark.parametrize("case", CASES.keys())
def test_java_reads_as_the_table_says(java_answers, case):
    assert java_answers[case] == _as_java_says(CASES[case][1])


@pytest.mark.parametrize("case", CASES.keys())
def test_spark_reads_as_the_table_says(spark_answers, case):
    """Spark reads with Properties.load as the table says, and the oracle's trim is Spark's."""
    assert spark_answers[case] == _as_java_says(CASES[case][1])


# Random files over the characters a properties file reader can get wrong.
PIECES = [
    "a",
    "b",
    "=",
    ":",
    " ",
    "\t",
    "\f",
    "\\",
    "\\",
    "\n",
    "\r",
    "\r\n",
    "#",
    "!",
    "u",
    "\\u0041",
    "\\u00",
    "\\uD83D",
    "\\uDE00",
    "\x0b",
    "\x85",
    "\u2028",
    "\ufeff",
    "\xe9",
    "\x00",
    "\x1f",
]
BAD_UTF8 = [b"\xe9", b"\xed\xa0\x80", b"\xf0\x9f", b"\xc3", b"\xc0\x80"]


def test_random_files_read_as_java_reads_them(oracle, tmp_path):
    rng = random.Random(20251)
    paths = []
    for number in range(600):
        data = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30))).encode()
        if rng.random() < 0.2:  # a byte sequence that is not UTF-8 in place of the é
            data = data.replace("\xe9".encode(), rng.choice(BAD_UTF8))
        paths.append(tmp_path / f"random{number}.conf")
        paths[-1].write_bytes(data)
    for path, answer in zip(paths, oracle(paths), strict=True):
        got = _read(path)
        if "error" in answer:
            assert isinstance(got, str) and "malformed \\uxxxx" in got, (path.read_bytes(), got)
        else:
            assert got == answer["props"], path.read_bytes()


def test_submit_shows_a_malformed_escape_as_one_line(tmp_path, closed_port):
    """The real command: the file and the line named, exit 2, before any request is sent (the
    server's port is closed: nothing would answer)."""
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "job.conf").write_text("spark.a=1\n# \\u12 in a comment is fine\nspark.b=\\u12\n")
    url = f"http://127.0.0.1:{closed_port}"
    r = run_cli("submit", "--server", url, "--properties-file", "job.conf", "app.py", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == (
        f"sessionsched submit: properties file {tmp_path / 'job.conf'}, line 3: malformed "
        "\\uxxxx escape: \\u followed by '12' (spark-submit refuses it too)\n"
    )
