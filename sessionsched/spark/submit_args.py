"""spark-submit's command line and its properties files, read the way spark-submit 4.0.1 reads them.

Pure functions over strings and files; nothing here talks to a server or starts a process.

Grammar (``org.apache.spark.launcher.SparkSubmitOptionParser`` in spark-launcher 4.0.1):

1. Arguments are read left to right. ``--opt=value`` is the same as ``--opt value`` for options
   that take a value (only for ``--`` options, and only with a non-empty value).
2. An option that takes a value (``SPARK_SUBMIT_OPTIONS``) consumes the next argument, whatever it
   looks like. ``-c`` is ``--conf``.
3. A switch (``SPARK_SUBMIT_SWITCHES``) takes no value. ``-h``/``-v`` are ``--help``/``--verbose``.
4. Any other argument starting with ``-`` is an error ("Unrecognized option").
5. The first other argument is the application file; everything after it belongs to the app,
   untouched, even if it looks like a spark-submit option.

``--conf`` takes exactly one argument of the form ``KEY=VALUE`` (split at the first ``=``);
``--conf KEY VALUE`` is refused by spark-submit ("Invalid argument to --conf"), and so here.

Property precedence, lowest first (measured with ``spark-submit --verbose`` 4.0.1):

1. ``spark-defaults.conf`` from ``$SPARK_CONF_DIR`` (else ``$SPARK_HOME/conf``) — skipped when
   ``--properties-file`` is given, unless ``--load-spark-defaults`` is given too;
2. ``--properties-file FILE``;
3. ``--conf KEY=VALUE`` (the last one of a key wins);
4. the dedicated options (``--executor-memory 2g`` beats ``--conf spark.executor.memory=4g``).

Only keys starting with ``spark.`` are kept; spark-submit ignores the others with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..model import WHOLE_NUMBER, parse_mem_mib, parse_priority

# Options that take a value, and switches, exactly as spark-launcher 4.0.1 lists them.
SPARK_SUBMIT_OPTIONS = frozenset(
    """--archives --class --conf --deploy-mode --driver-class-path --driver-cores
    --driver-default-class-path --driver-java-options --driver-library-path --driver-memory
    --executor-cores --executor-memory --files --jars --keytab --kill --master --remote --name
    --num-executors --packages --exclude-packages --principal --properties-file --proxy-user
    --py-files --queue --repositories --status --total-executor-cores""".split()
)
SPARK_SUBMIT_SWITCHES = frozenset(
    "--help --supervise --usage-error --verbose --version --load-spark-defaults".split()
)
SHORT_ALIASES = {"-c": "--conf", "-h": "--help", "-v": "--verbose"}

# The dedicated options that are shorthands for a Spark property (they win over --conf).
OPTION_PROPERTIES = {
    "--name": "spark.app.name",
    "--deploy-mode": "spark.submit.deployMode",
    "--driver-cores": "spark.driver.cores",
    "--driver-memory": "spark.driver.memory",
    "--executor-cores": "spark.executor.cores",
    "--executor-memory": "spark.executor.memory",
    "--num-executors": "spark.executor.instances",
    "--total-executor-cores": "spark.cores.max",
    "--py-files": "spark.submit.pyFiles",
    "--jars": "spark.jars",
    "--files": "spark.files",
    "--archives": "spark.archives",
    "--packages": "spark.jars.packages",
}

_EQ_OPTION = re.compile(r"(--[^=]+)=(.+)", re.DOTALL)


class SparkArgsError(ValueError):
    """spark-submit arguments or a properties file that cannot be used; ``str()`` is one line."""


@dataclass(frozen=True)
class SparkSubmitArgs:
    """One spark-submit command line, split into its parts. ``argv`` is kept as given."""

    argv: tuple[str, ...]
    options: tuple[tuple[str, str | None], ...] = ()  # (canonical option, value) in order
    conf: Mapping[str, str] = field(default_factory=dict)  # from --conf, last one wins
    app_file: str | None = None
    app_args: tuple[str, ...] = ()

    def last(self, option: str) -> str | None:
        """The value of the last occurrence of ``option`` (spark-submit keeps the last)."""
        value = None
        for name, v in self.options:
            if name == option:
                value = v
        return value

    def has(self, switch: str) -> bool:
        return any(name == switch for name, _ in self.options)

    @property
    def is_python(self) -> bool:
        return self.app_file is not None and self.app_file.endswith(".py")


def parse_spark_submit(argv: list[str] | tuple[str, ...]) -> SparkSubmitArgs:
    """Split a spark-submit command line (without ``spark-submit`` itself), see the module doc."""
    options: list[tuple[str, str | None]] = []
    conf: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        value: str | None = None
        m = _EQ_OPTION.fullmatch(arg)
        if m and m.group(1) in SPARK_SUBMIT_OPTIONS:
            arg, value = m.group(1), m.group(2)
        name = SHORT_ALIASES.get(arg, arg)
        if name in SPARK_SUBMIT_OPTIONS:
            if value is None:
                if i + 1 >= len(argv):
                    raise SparkArgsError(f"spark-submit option {arg} needs a value")
                i += 1
                value = argv[i]
            if name == "--conf":
                key, sep, conf_value = value.partition("=")
                if not sep or not key:
                    raise SparkArgsError(
                        f"--conf {value!r}: expected KEY=VALUE in one argument "
                        "(spark-submit does not take --conf KEY VALUE)"
                    )
                conf[key] = conf_value
            options.append((name, value))
        elif name in SPARK_SUBMIT_SWITCHES:
            options.append((name, None))
        elif arg.startswith("-"):
            raise SparkArgsError(f"unknown spark-submit option {arg!r}")
        else:
            return SparkSubmitArgs(tuple(argv), tuple(options), conf, arg, tuple(argv[i + 1 :]))
        i += 1
    return SparkSubmitArgs(tuple(argv), tuple(options), conf)


# --- properties files -------------------------------------------------------------------------
# spark-submit reads them with Utils.getPropertiesFromFile: java.util.Properties.load over the
# file decoded as UTF-8 (a malformed byte becomes U+FFFD), each value then trimmed by
# Utils.trimExceptCRLF. The reader below follows Properties.load as JDK 9 and later have it
# (tests/spark/test_properties_file.py holds it to what Java 17 and Spark themselves read).

_SPACE = " \t\f"  # the only whitespace java.util.Properties knows
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LINE_END = re.compile(r"\r\n|\r|\n")  # the only line terminators it knows
# trimExceptCRLF drops what String.trim does (chars <= U+0020) but CR and LF, escaped on purpose
_TRIMMED = r"[\x00-\x09\x0b\x0c\x0e-\x20]*"
_SPARK_TRIM = re.compile(f"{_TRIMMED}(.*?){_TRIMMED}", re.DOTALL)
# Java's UTF-8 decoder takes a UTF-16 surrogate encoded in UTF-8 (ED A0..BF, then a
# continuation byte if there is one) as one malformed sequence, one U+FFFD; Python's, one a byte.
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")


def _logical_lines(text: str):
    """(offset, line) for each logical line, as Properties.LineReader.readLine reads them:
    leading whitespace and blank lines skipped; a ``#``/``!`` where a logical line would start
    comments out the physical line (never continued); an odd number of backslashes before a
    line end continues the line on the next, less its leading whitespace (a blank next line
    ends it); a continuation at the end of the text is dropped."""
    i, n = 0, len(text)
    while True:
        buf: list[str] = []
        start, skip_space, continued, backslash = i, True, False, False
        while True:
            if i >= n:
                if buf:
                    yield start, "".join(buf[:-1] if backslash else buf)
                return
            c = text[i]
            i += 1
            if skip_space:
                if c in _SPACE or (not continued and c in "\r\n"):
                    start = start if continued else i
                    continue
                skip_space = continued = False
            if not buf and c in "#!":
                m = _LINE_END.search(text, i)
                if m is None:
                    return
                i = start = m.start() + 1  # a \n after \r: skipped as a blank line
                skip_space = True
            elif c not in "\r\n":
                buf.append(c)
                backslash = c == "\\" and not backslash
            elif not buf:
                skip_space = True
            elif i >= n or not backslash:
                yield start, "".join(buf[:-1] if backslash else buf)
                break
            else:
                buf.pop()
                skip_space, continued, backslash = True, True, False
                i += c == "\r" and text[i] == "\n"


def _unescape(text: str) -> str:
    r"""Properties.loadConvert: ``\t \n \r \f \uXXXX``, a backslash before any other character
    stands for that character; ValueError for a malformed ``\uXXXX``."""
    out: list[str] = []
    i, surrogate = 0, False
    while i < len(text):
        ch, i = text[i], i + 1
        if ch == "\\":  # never the last character: the line reader drops a lone one at the end
            ch, i = text[i], i + 1
            if ch == "u":
                digits = text[i : i + 4]
                if len(digits) < 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                    raise ValueError(f"malformed \\uxxxx escape: \\u followed by {digits!r}")
                ch, i = chr(int(digits, 16)), i + 4
                surrogate = surrogate or 0xD800 <= ord(ch) <= 0xDFFF
            else:
                ch = _ESCAPES.get(ch, ch)
        out.append(ch)
    result = "".join(out)
    if surrogate:  # Java's UTF-16 pairs become one character; a lone half stays as it is
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return result


def parse_properties(text: str) -> dict[str, str]:
    r"""A properties file's text as spark-submit reads it (above): ``key=value``, ``key: value``
    or ``key value`` (the first unescaped ``=``, ``:`` or whitespace ends the key; whitespace
    and one ``=`` or ``:`` after it are skipped); the last of a key wins; values trimmed as
    Spark trims them. SparkArgsError naming the line for a malformed ``\uXXXX``, which Java
    refuses ("Malformed \uxxxx encoding.")."""
    props: dict[str, str] = {}
    for start, line in _logical_lines(text):
        key_end, backslash = 0, False
        while key_end < len(line) and (backslash or line[key_end] not in "=:" + _SPACE):
            backslash = line[key_end] == "\\" and not backslash
            key_end += 1
        value_start, has_sep = key_end + 1, line[key_end : key_end + 1] in ("=", ":")
        while value_start < len(line) and line[value_start] in _SPACE + ("" if has_sep else "=:"):
            has_sep = has_sep or line[value_start] in "=:"
            value_start += 1
        try:
            key, value = _unescape(line[:key_end]), _unescape(line[value_start:])
        except ValueError as e:
            lineno = len(_LINE_END.findall(text, 0, start)) + 1
            raise SparkArgsError(f"line {lineno}: {e} (spark-submit refuses it too)") from None
        props[key] = _SPARK_TRIM.fullmatch(value).group(1)
    return props


def read_properties_file(path: str | Path) -> dict[str, str]:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise SparkArgsError(f"cannot read properties file {p}: {e.strerror or e}") from None
    try:
        return parse_properties(_ENCODED_SURROGATE.sub(b"\xff", data).decode("utf-8", "replace"))
    except SparkArgsError as e:
        raise SparkArgsError(f"properties file {p}, {e}") from None


def spark_defaults_path(environ: Mapping[str, str]) -> Path | None:
    """Where spark-submit looks for spark-defaults.conf: ``$SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``. None when neither variable is set."""
    if environ.get("SPARK_CONF_DIR"):
        return Path(environ["SPARK_CONF_DIR"]) / "spark-defaults.conf"
    if environ.get("SPARK_HOME"):
        return Path(environ["SPARK_HOME"]) / "conf" / "spark-defaults.conf"
    return None


@dataclass(frozen=True)
class Prop:
    value: str
    source: str  # where it was set, for messages: "--conf", "--executor-memory", a file path


def effective_properties(
    args: SparkSubmitArgs, environ: Mapping[str, str], cwd: str | Path
) -> dict[str, Prop]:
    """Every ``spark.*`` property the command line sets, with where it came from, by the
    precedence in the module doc. A relative ``--properties-file`` is taken from ``cwd``."""
    layers: list[tuple[str, Mapping[str, str]]] = []
    props_file = args.last("--properties-file")
    defaults = spark_defaults_path(environ)
    if defaults is not None and (props_file is None or args.has("--load-spark-defaults")):
        if defaults.is_file():
            layers.append((str(defaults), read_properties_file(defaults)))
    if props_file is not None:
        path = Path(cwd, props_file)
        layers.append((str(path), read_properties_file(path)))
    layers.append(("--conf", args.conf))
    for option, prop in OPTION_PROPERTIES.items():
        value = args.last(option)
        if value is not None:
            layers.append((option, {prop: value}))

    merged: dict[str, Prop] = {}
    for source, values in layers:
        for key, value in values.items():
            if key.startswith("spark."):
                merged[key] = Prop(value, source)
    return merged


# --- the properties the scheduler acts on (docs/user/submit.md) -----------------------------------


@dataclass(frozen=True)
class SchedulingProps:
    """The scheduler's view of a submission's properties, checked. None: not set."""

    priority: int | None = None
    slots_max: int | None = None
    queue: str | None = None
    policy: str | None = None
    deploy_mode: str | None = None
    dynamic_allocation: bool | None = None
    min_executors: int | None = None
    max_executors: int | None = None
    initial_executors: int | None = None
    executor_idle_timeout: str | None = None
    executor_instances: int | None = None
    cores_max: int | None = None
    executor_cores: int | None = None
    executor_mem_mib: int | None = None
    driver_cores: int | None = None
    driver_mem_mib: int | None = None
    driver_overhead_mib: int | None = None


def _where(key: str, prop: Prop) -> str:
    return f"{key}={prop.value!r} (from {prop.source})"


def _int(props: Mapping[str, Prop], key: str, minimum: int) -> int | None:
    prop = props.get(key)
    if prop is None:
        return None
    text = prop.value.strip()
    if not WHOLE_NUMBER.fullmatch(text) or int(text) < minimum:
        raise SparkArgsError(f"{_where(key, prop)}: expected a whole number >= {minimum}")
    return int(text)


def _mem_mib(props: Mapping[str, Prop], key: str) -> int | None:
    prop = props.get(key)
    if prop is None:
        return None
    try:
        return parse_mem_mib(prop.value)
    except ValueError:
        raise SparkArgsError(f"{_where(key, prop)}: expected a size like 512m or 2g") from None


def scheduling_properties(props: Mapping[str, Prop]) -> SchedulingProps:
    """The properties the scheduler acts on, checked; SparkArgsError names the property, its value
    and where it was set."""
    priority = None
    if "spark.ego.priority" in props:
        prop = props["spark.ego.priority"]
        try:
            priority = parse_priority(prop.value)
        except ValueError as e:
            raise SparkArgsError(f"{_where('spark.ego.priority', prop)}: {e}") from None
    dyn = props.get("spark.dynamicAllocation.enabled")
    if dyn is not None and dyn.value.strip().lower() not in ("true", "false"):
        raise SparkArgsError(
            f"{_where('spark.dynamicAllocation.enabled', dyn)}: expected true or false"
        )
    mode = props.get("spark.submit.deployMode")
    if mode is not None and mode.value.strip() not in ("client", "cluster"):
        raise SparkArgsError(
            f"{_where('spark.submit.deployMode', mode)}: expected client or cluster"
        )
    queue = props.get("spark.sessionsched.queue")
    policy = props.get("spark.ego.app.schedule.policy")
    idle = props.get("spark.dynamicAllocation.executorIdleTimeout")
    return SchedulingProps(
        priority=priority,
        slots_max=_int(props, "spark.ego.slots.max", 1),
        queue=queue.value.strip() if queue else None,
        policy=policy.value.strip() if policy else None,
        deploy_mode=mode.value.strip() if mode else None,
        dynamic_allocation=None if dyn is None else dyn.value.strip().lower() == "true",
        min_executors=_int(props, "spark.dynamicAllocation.minExecutors", 0),
        max_executors=_int(props, "spark.dynamicAllocation.maxExecutors", 0),
        initial_executors=_int(props, "spark.dynamicAllocation.initialExecutors", 0),
        executor_idle_timeout=idle.value.strip() if idle else None,
        executor_instances=_int(props, "spark.executor.instances", 0),
        cores_max=_int(props, "spark.cores.max", 1),
        executor_cores=_int(props, "spark.executor.cores", 1),
        executor_mem_mib=_mem_mib(props, "spark.executor.memory"),
        driver_cores=_int(props, "spark.driver.cores", 1),
        driver_mem_mib=_mem_mib(props, "spark.driver.memory"),
        driver_overhead_mib=_mem_mib(props, "spark.driver.memoryOverhead"),
    )
