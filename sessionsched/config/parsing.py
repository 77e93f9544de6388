"""YAML configuration -> validated, typed configuration: the machinery every section uses.

Every error is reported as one line naming where it is and what is wrong, e.g.
``queues[0].queues[1].policy: 'fairness' is not one of fifo, priority, fairshare``.
The CLI prints that line and exits 2; nobody sees a traceback for a bad file.
"""

from __future__ import annotations

import difflib
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator


class ConfigError(ValueError):
    """A configuration that cannot be used. ``str()`` is the one-line message for the user."""


def enum_value(enum: type[Enum], value: Any) -> Any:
    if isinstance(value, enum) or not isinstance(value, str):
        return value
    allowed = [m.value for m in enum]
    if value.strip().lower() not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return value.strip().lower()


class Strict(BaseModel):
    # YAML's .inf and .nan pass every bound (``ge=0``, ``gt=0``) they are not refused by, and
    # a time or a weight of either has no meaning: a run never ending, NaN in the results.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # Pydantic's lax mode reads YAML's true as 1 and false as 0 where a number is wanted:
    # ``max_cores: true`` capped a queue at 1 core without a word.
    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, v: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None:
            return v
        if isinstance(v, bool) and _number_not_bool(_kinds(field.annotation)):
            raise ValueError(f"expected a number, not {str(v).lower()}")
        if isinstance(v, dict):  # a map of numbers ({gpu: 4}, {a: 40}): each value too
            maps = [t for t in _kinds(field.annotation) if typing.get_origin(t) is dict]
            if maps and _number_not_bool(_kinds(typing.get_args(maps[0])[1])):
                for key, value in v.items():
                    if isinstance(value, bool):
                        raise ValueError(f"{key}: expected a number, not {str(value).lower()}")
        return v


def _kinds(annotation: Any) -> set[Any]:
    """The types a field's ``annotation`` takes: Annotated and unions (Optional) unwrapped."""
    kinds: set[Any] = set()

    def gather(t: Any) -> None:
        origin = typing.get_origin(t)
        if origin is typing.Annotated:
            gather(typing.get_args(t)[0])
        elif origin is typing.Union or origin is types.UnionType:
            for arg in typing.get_args(t):
                gather(arg)
        else:
            kinds.add(t)

    gather(annotation)
    return kinds


def _number_not_bool(kinds: set[Any]) -> bool:
    return bool(kinds & {int, float}) and bool not in kinds

def format_validation_error(err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """The first problem as ``path.to[0].field: message``. An unknown setting goes first: a
    missing one beside it is most often the same key misspelt (``stagess:``, and ``stages``
    missing), which is then named in it and not counted again; else, given the ``model``
    validated, the closest setting it takes there (``polcy:``, ``policy``)."""
    errors = err.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    more = len(errors) - 1
    msg = first["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if first["type"] == "extra_forbidden":
        msg = "unknown setting"
        meant = _misspelt(first["loc"], errors)
        if meant is not None:
            msg += f"; did you mean {meant!r}?"
            more -= 1
        elif (meant := _closest_setting(model, first["loc"])) is not None:
            msg += f"; did you mean {meant!r}?"
    elif first["type"] == "missing":
        msg = "missing"
    path = _path(first["loc"])
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {msg}{tail}" if path else f"{msg}{tail}"


def _path(loc: tuple) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function"):
            continue
        else:
            path += f".{part}" if path else str(part)
    return path


def _closest_setting(model: type[BaseModel] | None, loc: tuple) -> str | None:
    """The setting of ``model`` closest in name to the unknown key at ``loc``: the model's
    fields are followed down the path (a list's items, a map's values, an optional's value)."""
    t: Any = model
    for part in loc[:-1]:
        if str(part).startswith("function"):
            continue
        t = _inside(t, part)
    t = _inside(t, None)
    if not (isinstance(t, type) and issubclass(t, BaseModel)):
        return None
    close = difflib.get_close_matches(str(loc[-1]), list(t.model_fields), n=1)
    return close[0] if close else None


def _inside(t: Any, part: str | int | None) -> Any:
    """What ``t`` holds at ``part`` of a path (None: ``t`` itself, its optional unwrapped)."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _inside(args[0], part)
    if origin is typing.Union or origin is types.UnionType:
        inner = [_inside(a, part) for a in args if a is not type(None)]
        return next((i for i in inner if i is not None), None)
    if part is None:
        return t
    if isinstance(t, type) and issubclass(t, BaseModel):
        field = t.model_fields.get(str(part))
        return None if field is None else field.annotation
    if origin in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _misspelt(loc: tuple, errors: list) -> str | None:
    """The missing setting beside the unknown one at ``loc`` whose name is closest to it."""
    missing = [str(e["loc"][-1]) for e in errors
               if e["type"] == "missing" and e["loc"][:-1] == loc[:-1]]
    close = difflib.get_close_matches(str(loc[-1]), missing, n=1)
    return close[0] if close else None


class _OnceLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping: it would keep the last
    and drop the first without a word (a second ``apps:``, half a workload lost). Keys a merge
    (``<<: *template``) brings in may still be set again: that is what a merge is for."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    twice = key in seen
                except TypeError:  # unhashable: the safe loader refuses it itself
                    continue
                if twice:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found {key!r} twice", key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> Any:
    """Parsed YAML, or ConfigError naming the file and the problem."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start} does not decode)") from None
    try:
        data = yaml.load(text, Loader=_OnceLoader)  # a SafeLoader: builds no Python object
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}:{where} not valid YAML: {getattr(e, 'problem', e)}") from None
    return {} if data is None else data


def parse_model(model: type[BaseModel], data: Any, source: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {format_validation_error(e, model)}") from None
