"""Spark event logs -> a simulator workload (``sessionsched workload from-eventlogs``).

``files`` finds the logs a list of paths names and reads each one's JSON lines (``codecs``:
Spark's compression streams); ``events`` turns one app's lines into its facts; ``app_entry``
makes an app's workload entry of them, ``shape`` the cluster (given or inferred), ``render``
the YAML; ``build`` puts it together and leaves out, naming each, the logs it cannot read.
"""

from .build import Built, NoApps, Source, build

__all__ = ["Built", "NoApps", "Source", "build"]
