"""The agent as a zip for ``--py-files`` (drivers that cannot see this installation, e.g. on
Kubernetes): ``python -m sessionsched.agent.package OUT.zip``.

The zip holds ``sessionsched/__init__.py`` and the agent's driver-side modules -- standard
library + pyspark/py4j only. ``bootstrap.py`` is both inside it and the file to give
spark-submit as the application (``spark-submit --py-files agent.zip bootstrap.py app.py``):
it imports the agent from the zip on the driver's PYTHONPATH.
"""

from __future__ import annotations

import os
import sys
import zipfile

# Driver-side modules only: launch.py and package.py are for the service.
DRIVER_MODULES = (
    "__init__.py",
    "agent.py",
    "attach.py",
    "bootstrap.py",
    "profiles.py",
    "protocol.py",
    "reclaim.py",
    "spark_control.py",
    "stages.py",
    "task_slots.py",
    "transport.py",
    "watch.py",
)


def build_zip(out_path: str) -> str:
    agent_dir = os.path.dirname(os.path.abspath(__file__))
    package_init = os.path.join(os.path.dirname(agent_dir), "__init__.py")
    with zipfile.ZipFile(out_path, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(package_init, "sessionsched/__init__.py")
        for name in DRIVER_MODULES:
            z.write(os.path.join(agent_dir, name), f"sessionsched/agent/{name}")
    return out_path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m sessionsched.agent.package OUT.zip")
    print(build_zip(sys.argv[1]))
