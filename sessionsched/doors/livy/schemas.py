"""Apache Livy's request bodies, as typed data (Livy's REST API: ``POST /batches``,
``POST /sessions``, ``POST /sessions/{id}/statements``).

Field names are Livy's. Unknown fields are refused (a misspelt ``clasName`` must not be
dropped silently); ``conf`` values may be numbers or booleans (clients send them so) and are
passed on as Spark property strings.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

__all__ = ["LivyBatchIn", "LivySessionIn", "StatementIn", "ValidationError", "first_error"]


# Livy's batch fields that are spark-submit options, in the order they are given.
LIVY_OPTIONS = (
    ("className", "--class"), ("name", "--name"), ("jars", "--jars"), ("pyFiles", "--py-files"),
    ("files", "--files"), ("archives", "--archives"), ("driverMemory", "--driver-memory"),
    ("driverCores", "--driver-cores"), ("executorMemory", "--executor-memory"),
    ("executorCores", "--executor-cores"), ("numExecutors", "--num-executors"),
)


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
    driverCores: int | None = Field(None, ge=1)
    executorMemory: str | None = None
    executorCores: int | None = Field(None, ge=1)
    numExecutors: int | None = Field(None, ge=1)
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
    return f"{loc}: {first.get('msg', 'invalid')}" if loc else first.get("msg", "invalid")


class LivySessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = "pyspark"
    name: str | None = None
    proxyUser: str | None = None
    queue: str | None = None
    conf: dict[str, bool | int | float | str] = {}
    heartbeatTimeoutInSecond: int = Field(0, ge=0)
    driverMemory: str | None = None
    driverCores: int | None = Field(None, ge=1)
    executorMemory: str | None = None
    executorCores: int | None = Field(None, ge=1)
    numExecutors: int | None = Field(None, ge=1)
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
