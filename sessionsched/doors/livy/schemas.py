"""Apache Livy's request bodies, as typed data (Livy's REST API: ``POST /batches``,
``POST /sessions``, ``POST /sessions/{id}/statements``).

Field names are Livy's. Unknown fields are refused (a misspelt ``clasName`` must not be
dropped silently); ``conf`` values may be numbers or booleans (clients send them so) and are
passed on as Spark property strings.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from pydantic.functional_validators import BeforeValidator

__all__ = ["LivyBatchIn", "LivySessionIn", "StatementIn", "ValidationError", "first_error"]


# Livy's batch fields that are spark-submit options, in the order they are given.
LIVY_OPTIONS = (
    ("className", "--class"), ("name", "--name"), ("jars", "--jars"), ("pyFiles", "--py-files"),
    ("files", "--files"), ("archives", "--archives"), ("driverMemory", "--driver-memory"),
    ("driverCores", "--driver-cores"), ("executorMemory", "--executor-memory"),
    ("executorCores", "--executor-cores"), ("numExecutors", "--num-executors"),
)


def _not_a_bool(value: object) -> object:
    # Pydantic's lax mode reads ``true`` as 1; Livy's own server refuses a boolean where it
    # wants a number, and a client that sends one has mixed up its fields.
    if isinstance(value, bool):
        raise ValueError("Input should be a whole number, not true or false")
    return value


# Livy's counts: whole numbers (a numeric string such as "2" is read as Livy reads it).
Count = Annotated[int, BeforeValidator(_not_a_bool), Field(ge=1)]


class LivyBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1)
    proxyUser: str | None = None
    className: str | None = None
    args: list[str] = []
    jars: list[str] = []
    pyFiles: list[str] = []
    files: list[str] = []
    archives: list[str] = []
    driverMemory: str | None = None
    driverCores: Count | None = None
    executorMemory: str | None = None
    executorCores: Count | None = None
    numExecutors: Count | None = None
    name: str | None = None
    queue: str | None = None
    conf: dict[str, StrictBool | int | float | str] = {}

    def spark_conf(self) -> dict[str, str]:
        """``conf`` as Spark property strings (``true``, not ``True``)."""
        return {k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in self.conf.items()}

    def argv(self) -> list[str]:
        """The batch as spark-submit arguments (to the scheduler a batch is a spark-submit run
        like any other): its fields as options (``LIVY_OPTIONS``), then the file and its
        arguments. ``ValueError`` for a relative file: Livy takes absolute paths and URIs (the
        driver runs in the state directory)."""
        if not (self.file.startswith("/") or ":" in self.file.split("/", 1)[0]):
            raise ValueError(f"file {self.file!r}: give an absolute path or a URI "
                             "(local:, file:, hdfs:, ...)")
        argv: list[str] = []
        for field_name, option in LIVY_OPTIONS:
            value = getattr(self, field_name)
            if isinstance(value, list):
                value = ",".join(value)
            if value not in (None, ""):
                argv += [option, str(value)]
        return [*argv, self.file, *self.args]


def first_error(err: ValidationError) -> str:
    """The first problem of a refused body, as one line: ``field: what is wrong``."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    if first.get("type") == "extra_forbidden":
        return f"unknown field {loc!r}"
    msg = first.get("msg", "invalid")
    if first.get("type") == "value_error":  # our own check's words, without Pydantic's prefix
        msg = str(first.get("ctx", {}).get("error", msg))
    return f"{loc}: {msg}" if loc else msg


class LivySessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = "pyspark"
    name: str | None = None
    proxyUser: str | None = None
    queue: str | None = None
    conf: dict[str, bool | int | float | str] = {}
    heartbeatTimeoutInSecond: Annotated[int, BeforeValidator(_not_a_bool), Field(ge=0)] = 0
    driverMemory: str | None = None
    driverCores: Count | None = None
    executorMemory: str | None = None
    executorCores: Count | None = None
    numExecutors: Count | None = None
    jars: list[str] = []
    pyFiles: list[str] = []
    files: list[str] = []
    archives: list[str] = []

    def spark_conf(self) -> dict[str, str]:
        """``conf`` plus Livy's sizing fields as the Spark properties they stand for."""
        conf = {k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in self.conf.items()}
        for value, key in ((self.driverMemory, "spark.driver.memory"),
                           (self.driverCores, "spark.driver.cores"),
                           (self.executorMemory, "spark.executor.memory"),
                           (self.executorCores, "spark.executor.cores"),
                           (self.numExecutors, "spark.dynamicAllocation.initialExecutors"),
                           (",".join(self.jars), "spark.jars"),
                           (",".join(self.pyFiles), "spark.submit.pyFiles"),
                           (",".join(self.files), "spark.files"),
                           (",".join(self.archives), "spark.archives")):
            if value not in (None, ""):
                conf.setdefault(key, str(value))
        return conf


class StatementIn(BaseModel):
    model_config = ConfigDict(extra="ignore")  # clients add "kind"

    code: str
