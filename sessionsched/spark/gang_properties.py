"""An app's gang from its Spark properties: one pure parser (docs/design/gangs.md).

Two ways to ask, both read on every backend:

1. sessionsched's own properties:
   ``spark.sessionsched.gang.size``     N executors beside the driver (a whole number >= 1);
   ``spark.sessionsched.gang.timeout``  seconds, or a Spark time string (``90s``, ``15min``,
                                        ``1h``; a bare number is seconds); default 900;
   ``spark.sessionsched.gang.style``    ``hard`` or ``soft`` (any case); default ``soft``.
2. YuniKorn's annotations, exactly as Spark-on-Kubernetes users write them (so a team moving
   from YuniKorn keeps its job definitions):
   ``spark.kubernetes.driver.annotation.yunikorn.apache.org/task-groups``: a JSON list of
   task groups; the executors' group is the one named by
   ``spark.kubernetes.executor.annotation.yunikorn.apache.org/task-group-name`` (else
   ``spark-executor``) and gives N (its ``minMember``); the driver's group (named by
   ``spark.kubernetes.driver.annotation.yunikorn.apache.org/task-group-name``, else
   ``spark-driver``) must ask for one member if it is there. Each group's ``minResource``
   (``cpu``, ``memory`` as Kubernetes quantities) is checked only as a pod's requests would be
   (well formed, not below zero): a gang's executors are the app's own executor size, what its
   real executors ask for.
   ``spark.kubernetes.driver.annotation.yunikorn.apache.org/schedulingPolicyParameters``:
   ``placeholderTimeoutInSeconds=… gangSchedulingStyle=Hard|Soft`` (space separated).

Where both are given, sessionsched's own property wins for that field. Policy parameters
without a gang ask for nothing (as in YuniKorn). Anything malformed: ``ValueError`` with one
line naming the property and what is wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal

from ..model import WHOLE_NUMBER, Gang, GangStyle

SIZE = "spark.sessionsched.gang.size"
TIMEOUT = "spark.sessionsched.gang.timeout"
STYLE = "spark.sessionsched.gang.style"
_YK = "yunikorn.apache.org/"
TASK_GROUPS = f"spark.kubernetes.driver.annotation.{_YK}task-groups"
POLICY_PARAMETERS = f"spark.kubernetes.driver.annotation.{_YK}schedulingPolicyParameters"
EXECUTOR_GROUP_NAME = f"spark.kubernetes.executor.annotation.{_YK}task-group-name"
DRIVER_GROUP_NAME = f"spark.kubernetes.driver.annotation.{_YK}task-group-name"
DEFAULT_EXECUTOR_GROUP = "spark-executor"
DEFAULT_DRIVER_GROUP = "spark-driver"
DEFAULT_TIMEOUT_S = 900.0

# Spark's time suffixes (JavaUtils.timeSuffixes), in seconds.
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0,
               "d": 86400.0}
_TIME = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)?")
# A Kubernetes quantity, as apimachinery's resource.Quantity documents and parses it:
# <signedNumber><suffix>; a number is digits, digits.digits, digits. or .digits; the suffix
# binary SI (Ki Mi Gi Ti Pi Ei), decimal SI (n u m "" k M G T P E) or an exponent, e or E and a
# whole number that fits in 64 bits (the parser takes only digits after the exponent's sign).
# The Python client's parse_quantity is laxer (Decimal's syntax: "NaN", "1_000", "1e3k"), and
# so is apimachinery's own scanner with a number without digits ("Gi", ".", "-" read as 0):
# refused here, as the grammar has them.
_QUANTITY = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)"
                       r"(?:[KMGTPE]i|[numkMGTPE]|[eE]([+-]?[0-9]+))?")
# Quantity.UnmarshalJSON trims a value with Go's strings.TrimSpace (Unicode White_Space).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B)))


def parse_time_s(key: str, value: str) -> float:
    """A timeout in seconds from a Spark time string, a bare number being seconds; > 0."""
    m = _TIME.fullmatch(value.strip().lower())
    if not m or (m.group(2) or "s") not in _TIME_UNITS:
        raise ValueError(f"{key}={value!r}: expected seconds or a time like 90s, 15min, 1h")
    seconds = float(m.group(1)) * _TIME_UNITS[m.group(2) or "s"]
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{key}={value!r}: expected a timeout above 0")
    return seconds


def parse_style(key: str, value: str) -> GangStyle:
    try:
        return GangStyle(value.strip().lower())
    except ValueError:
        raise ValueError(f"{key}={value!r}: expected hard or soft") from None


def _whole(key: str, value: object, minimum: int) -> int:
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(
        value, bool) else ""
    if not WHOLE_NUMBER.fullmatch(text) or int(text) < minimum:
        raise ValueError(f"{key}={value!r}: expected a whole number >= {minimum}")
    return int(text)


def _json_float(text: str) -> float | Decimal:
    number = float(text)
    return number if math.isfinite(number) else Decimal(text)


def _group_named(groups: list[dict], name: str) -> dict | None:
    return next((g for g in groups if g.get("name") == name), None)


def _check_group(group: dict, where: str) -> int:
    """A task group's ``minMember``, its ``minResource`` checked."""
    if "minMember" not in group:
        raise ValueError(f"{where}: no minMember")
    members = _whole(f"{where} minMember", group["minMember"], 1)
    resource = group.get("minResource", {})
    if not isinstance(resource, dict):
        raise ValueError(f"{where} minResource: expected an object like "
                         '{"cpu": "1", "memory": "2Gi"}')
    for kind, quantity in resource.items():
        _check_quantity(f"{where} minResource {kind}", quantity)
    return members


def _check_quantity(where: str, quantity: object) -> None:
    """A task group's minResource value as YuniKorn reads it (JSON into a Kubernetes
    resource.Quantity: a string or a number; null is zero) and as a pod's requests must be:
    ValueError naming ``where`` unless a well-formed quantity that is not below zero."""
    if quantity is None:
        return
    m = None
    if isinstance(quantity, (str, int, float, Decimal)) and not isinstance(quantity, bool):
        m = _QUANTITY.fullmatch(str(quantity).strip(_GO_SPACE))
    if m is None or (m.group(3) and not -(2**63) <= int(m.group(3)) < 2**63):
        raise ValueError(f"{where}={quantity!r}: expected a Kubernetes quantity like 1, 500m "
                         "or 2Gi")
    if m.group(1) == "-" and m.group(2).strip("0.") != "":
        raise ValueError(f"{where}={quantity!r}: below zero (Kubernetes refuses a pod whose "
                         "requests are)")


def _task_groups(conf: Mapping[str, str]) -> int | None:
    """N from YuniKorn's task groups, or None when the app names none."""
    text = conf.get(TASK_GROUPS)
    if text is None or not text.strip():
        return None
    try:
        # a number too big for a float stays exact, as Go's decoder hands it to the Quantity
        groups = json.loads(text, parse_float=_json_float)
    except ValueError as e:
        raise ValueError(f"{TASK_GROUPS}: not JSON ({e.msg} at line {e.lineno} column "
                         f"{e.colno})") from None
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise ValueError(f"{TASK_GROUPS}: expected a JSON list of task groups "
                         '(objects with "name", "minMember", "minResource")')
    names = [g.get("name") for g in groups]
    if len(set(map(str, names))) != len(names):
        raise ValueError(f"{TASK_GROUPS}: task group names must be unique, got {names}")
    exec_name = (conf.get(EXECUTOR_GROUP_NAME) or DEFAULT_EXECUTOR_GROUP).strip()
    driver_name = (conf.get(DRIVER_GROUP_NAME) or DEFAULT_DRIVER_GROUP).strip()
    executors = _group_named(groups, exec_name)
    if executors is None:
        raise ValueError(f"{TASK_GROUPS}: no task group named {exec_name!r} for the executors "
                         f"(groups: {', '.join(map(str, names)) or 'none'})")
    n = _check_group(executors, f"{TASK_GROUPS} group {exec_name!r}")
    driver = _group_named(groups, driver_name) if driver_name != exec_name else None
    if driver is not None and _check_group(driver, f"{TASK_GROUPS} group {driver_name!r}") != 1:
        raise ValueError(f"{TASK_GROUPS} group {driver_name!r}: minMember "
                         f"{driver['minMember']!r}, but a Spark app has one driver")
    return n


def _policy_parameters(conf: Mapping[str, str]) -> tuple[float | None, GangStyle | None]:
    text = conf.get(POLICY_PARAMETERS)
    timeout_s: float | None = None
    style: GangStyle | None = None
    for pair in (text or "").split():
        key, eq, value = pair.partition("=")
        where = f"{POLICY_PARAMETERS} {key}"
        if not eq or not value:
            raise ValueError(f"{POLICY_PARAMETERS}: {pair!r} is not PARAM=VALUE")
        if key == "placeholderTimeoutInSeconds":
            timeout_s = float(_whole(where, value, 1))
        elif key == "gangSchedulingStyle":
            style = parse_style(where, value)
        else:
            raise ValueError(f"{POLICY_PARAMETERS}: unknown parameter {key!r} (known: "
                             "placeholderTimeoutInSeconds, gangSchedulingStyle)")
    return timeout_s, style


def gang_from_conf(conf: Mapping[str, str]) -> Gang | None:
    """The gang ``conf`` asks for (module doc), or None; ValueError: one line naming the
    problem."""
    own_size = conf.get(SIZE)
    size = _whole(SIZE, own_size, 1) if own_size is not None else None
    yk_size = _task_groups(conf)
    yk_timeout_s, yk_style = _policy_parameters(conf)
    timeout = conf.get(TIMEOUT)
    style = conf.get(STYLE)
    timeout_s = parse_time_s(TIMEOUT, timeout) if timeout is not None else yk_timeout_s
    gang_style = parse_style(STYLE, style) if style is not None else yk_style
    n = size if size is not None else yk_size
    if n is None:
        if timeout is not None or style is not None:
            raise ValueError(f"{TIMEOUT if timeout is not None else STYLE} is set but no gang "
                             f"is asked for: set {SIZE} (or YuniKorn's task-groups)")
        return None
    return Gang(executors=n,
                timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
                style=GangStyle.SOFT if gang_style is None else gang_style)
