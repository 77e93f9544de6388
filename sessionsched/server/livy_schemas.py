"""Apache Livy's request bodies, as typed data (Livy's REST API, ``POST /batches``).

Field names are Livy's. Unknown fields are refused (a misspelt ``clasName`` must not be
dropped silently); ``conf`` values may be numbers or booleans (clients send them so) and are
passed on as Spark property strings.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

__all__ = ["LivyBatchIn", "ValidationError", "first_error"]


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


def first_error(err: ValidationError) -> str:
    """The first problem of a refused body, as one line: ``field: what is wrong``."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    if first.get("type") == "extra_forbidden":
        return f"unknown field {loc!r}"
    return f"{loc}: {first.get('msg', 'invalid')}" if loc else first.get("msg", "invalid")
