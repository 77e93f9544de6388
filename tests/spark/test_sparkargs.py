"""spark-submit's grammar and properties files, as spark-submit 4.0.1 reads them (the cases
were checked against real spark-submit --verbose where noted in spark/submit_args.py)."""

import pytest

from sessionsched.spark.submit_args import (
    SparkArgsError,
    effective_properties,
    parse_properties,
    parse_spark_submit,
    scheduling_properties,
)

GRAMMAR = {
    "app only": (["app.py"], {}, "app.py", []),
    "app args untouched, even option-like": (
        ["--name", "n", "app.py", "--conf", "x", "-v"],
        {},
        "app.py",
        ["--conf", "x", "-v"],
    ),
    "conf KEY=VALUE": (["--conf", "spark.a=1", "app.py"], {"spark.a": "1"}, "app.py", []),
    "conf splits at the first =": (
        ["--conf", "spark.a=b=c", "app.py"],
        {"spark.a": "b=c"},
        "app.py",
        [],
    ),
    "conf with =, -c alias, last wins": (
        ["--conf=spark.a=1", "-c", "spark.b=2", "--conf", "spark.a=3", "app.py"],
        {"spark.a": "3", "spark.b": "2"},
        "app.py",
        [],
    ),
    "empty conf value allowed": (["--conf", "spark.a=", "app.py"], {"spark.a": ""}, "app.py", []),
    "an option's value may look like an option": (
        ["--name", "--verbose", "app.py"],
        {},
        "app.py",
        [],
    ),
    "switches take no value": (
        ["--verbose", "--supervise", "-v", "app.jar", "1"],
        {},
        "app.jar",
        ["1"],
    ),
    "no app file": (["--name", "n"], {}, None, []),
}


@pytest.mark.parametrize("argv,conf,app,app_args", GRAMMAR.values(), ids=GRAMMAR.keys())
def test_spark_submit_grammar(argv, conf, app, app_args):
    parsed = parse_spark_submit(argv)
    assert dict(parsed.conf) == conf
    assert parsed.app_file == app
    assert list(parsed.app_args) == app_args
    assert parsed.argv == tuple(argv)  # kept as given


def test_options_keep_their_order_and_last_value_wins():
    parsed = parse_spark_submit(
        ["--executor-memory", "1g", "--name=a", "--executor-memory", "2g", "x.py"]
    )
    assert parsed.options == (
        ("--executor-memory", "1g"),
        ("--name", "a"),
        ("--executor-memory", "2g"),
    )
    assert parsed.last("--executor-memory") == "2g"
    assert parsed.is_python


BAD_GRAMMAR = {
    "conf KEY VALUE (spark-submit refuses it too)": (
        ["--conf", "spark.a", "1", "app.py"],
        "--conf 'spark.a': expected KEY=VALUE in one argument",
    ),
    "conf without key": (["--conf", "=1", "app.py"], "--conf '=1': expected KEY=VALUE"),
    "unknown option": (["--frobnicate", "app.py"], "unknown spark-submit option '--frobnicate'"),
    "option without value at the end": (["--name"], "spark-submit option --name needs a value"),
}


@pytest.mark.parametrize("argv,message", BAD_GRAMMAR.values(), ids=BAD_GRAMMAR.keys())
def test_bad_spark_submit_arguments(argv, message):
    with pytest.raises(SparkArgsError) as e:
        parse_spark_submit(argv)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


PROPERTIES = {
    "equals": ("spark.a=1", {"spark.a": "1"}),
    "colon and spaces": ("spark.a : 1", {"spark.a": "1"}),
    "whitespace separator (spark-defaults.conf style)": ("spark.a   1 2", {"spark.a": "1 2"}),
    "comments and blank lines": ("# c\n  ! c\n\nspark.a=1", {"spark.a": "1"}),
    "value trimmed, as Spark does": ("spark.a=  1  ", {"spark.a": "1"}),
    "continuation line": ("spark.a=x\\\n    y", {"spark.a": "xy"}),
    "escaped backslash is no continuation": (
        "spark.a=x\\\\\nspark.b=2",
        {"spark.a": "x\\", "spark.b": "2"},
    ),
    "escaped separator in key, unicode escape": ("a\\=b=\\u0041", {"a=b": "A"}),
    "key without value": ("spark.a", {"spark.a": ""}),
}


@pytest.mark.parametrize("text,expected", PROPERTIES.values(), ids=PROPERTIES.keys())
def test_properties_file_syntax(text, expected):
    assert parse_properties(text) == expected


@pytest.fixture
def conf_dir(tmp_path):
    d = tmp_path / "conf"
    d.mkdir()
    (d / "spark-defaults.conf").write_text(
        "spark.ego.priority 100\n"
        "spark.sessionsched.queue root.etl\n"
        "spark.executor.memory 1g\n"
        "spark.only.defaults yes\n"
        "notspark.key ignored\n"
    )
    (tmp_path / "props.conf").write_text("spark.ego.priority=200\nspark.only.props=yes\n")
    return d


# Precedence, lowest first: spark-defaults.conf < --properties-file < --conf < dedicated option.
# --properties-file replaces spark-defaults.conf unless --load-spark-defaults (spark-submit 4.0.1).
PRECEDENCE = {
    "defaults only": (
        ["app.py"],
        {"spark.ego.priority": ("100", "defaults"), "spark.only.defaults": ("yes", "defaults")},
    ),
    "--conf beats defaults": (
        ["--conf", "spark.ego.priority=300", "app.py"],
        {
            "spark.ego.priority": ("300", "--conf"),
            "spark.sessionsched.queue": ("root.etl", "defaults"),
        },
    ),
    "--properties-file replaces defaults": (
        ["--properties-file", "props.conf", "app.py"],
        {"spark.ego.priority": ("200", "props"), "spark.only.defaults": None},
    ),
    "--load-spark-defaults keeps both, the file wins": (
        ["--properties-file", "props.conf", "--load-spark-defaults", "app.py"],
        {"spark.ego.priority": ("200", "props"), "spark.only.defaults": ("yes", "defaults")},
    ),
    "dedicated option beats --conf": (
        ["--conf", "spark.executor.memory=4g", "--executor-memory", "2g", "app.py"],
        {"spark.executor.memory": ("2g", "--executor-memory")},
    ),
    "non-spark keys are dropped": (
        ["--conf", "other.key=1", "app.py"],
        {"other.key": None, "notspark.key": None},
    ),
}


@pytest.mark.parametrize("argv,expected", PRECEDENCE.values(), ids=PRECEDENCE.keys())
def test_property_precedence(conf_dir, argv, expected):
    props = effective_properties(
        parse_spark_submit(argv), {"SPARK_CONF_DIR": str(conf_dir)}, conf_dir.parent
    )
    for key, want in expected.items():
        if want is None:
            assert key not in props
            continue
        value, source = want
        assert props[key].value == value
        assert source in props[key].source


def test_no_conf_dir_means_no_defaults(conf_dir):
    props = effective_properties(parse_spark_submit(["app.py"]), {}, conf_dir.parent)
    assert props == {}


def test_spark_home_conf_is_the_fallback(conf_dir):
    props = effective_properties(
        parse_spark_submit(["app.py"]), {"SPARK_HOME": str(conf_dir.parent)}, conf_dir.parent
    )
    assert props["spark.ego.priority"].value == "100"


def test_missing_properties_file_is_one_line(tmp_path):
    with pytest.raises(SparkArgsError, match=r"cannot read properties file .*nope.conf"):
        effective_properties(
            parse_spark_submit(["--properties-file", "nope.conf", "app.py"]), {}, tmp_path
        )


def props_from(conf):
    return effective_properties(parse_spark_submit([*conf, "app.py"]), {}, "/")


def test_scheduling_properties_read():
    sched = scheduling_properties(
        props_from(
            [
                "--conf", "spark.ego.priority=9000",
                "--conf", "spark.ego.slots.max=4",
                "--conf", "spark.sessionsched.queue=root.adhoc",
                "--conf", "spark.dynamicAllocation.enabled=TRUE",
                "--conf", "spark.dynamicAllocation.maxExecutors=3",
                "--executor-cores", "2",
                "--driver-memory", "512m",
            ]
        )
    )  # fmt: skip
    assert (sched.priority, sched.slots_max, sched.queue) == (9000, 4, "root.adhoc")
    assert (sched.dynamic_allocation, sched.max_executors) == (True, 3)
    assert (sched.executor_cores, sched.driver_mem_mib) == (2, 512)


BAD_PROPERTIES = {
    "priority not a number": (
        "spark.ego.priority=high",
        "spark.ego.priority='high' (from --conf): priority 'high' is not a whole number",
    ),
    "priority zero": ("spark.ego.priority=0", "priority 0 is outside 1..10000"),
    "priority too high": ("spark.ego.priority=10001", "priority 10001 is outside 1..10000"),
    "priority fraction": ("spark.ego.priority=1.5", "is not a whole number"),
    "slots.max zero": (
        "spark.ego.slots.max=0",
        "spark.ego.slots.max='0' (from --conf): expected a whole number >= 1",
    ),
    "maxExecutors negative": (
        "spark.dynamicAllocation.maxExecutors=-1",
        "expected a whole number >= 0",
    ),
    "memory without number": ("spark.executor.memory=lots", "expected a size like 512m or 2g"),
    "dynamic allocation not boolean": (
        "spark.dynamicAllocation.enabled=yes",
        "expected true or false",
    ),
    "deploy mode unknown": ("spark.submit.deployMode=yarn", "expected client or cluster"),
}


@pytest.mark.parametrize("conf,message", BAD_PROPERTIES.values(), ids=BAD_PROPERTIES.keys())
def test_bad_scheduling_properties(conf, message):
    with pytest.raises(SparkArgsError) as e:
        scheduling_properties(props_from(["--conf", conf]))
    assert message in str(e.value)
