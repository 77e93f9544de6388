"""The spark package's tests: pure readers of Spark's formats, and one CLI call that must refuse
a malformed properties file before it reaches any server (a port nothing listens on)."""

from __future__ import annotations

from tests.support.app_fixtures import closed_port  # noqa: F401 - fixture
