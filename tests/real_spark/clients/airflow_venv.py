"""The Airflow virtualenv of the real clients' tests:
``python -m tests.real_spark.clients.airflow_venv [DIR]`` builds it (``make test`` does, before
pytest), and the ``airflow_python`` fixture calls ``ensure`` too, for pytest run by hand. Built
once and kept: it is rebuilt only when it is missing or ``airflow-requirements.txt`` changed
(Airflow's dependency pins conflict with the project's, hence a virtualenv of its own).
Installed with uv (a test dependency): ~15 s where pip took ~90 s, which CI's clean clone pays
every run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from uv import find_uv_bin

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / ".venv-airflow"
REQUIREMENTS = Path(__file__).with_name("airflow-requirements.txt")
INSTALL_TIMEOUT_S = 1800


def ensure(venv: Path = VENV) -> Path:
    """The virtualenv's python, built first if missing or built from other requirements."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = REQUIREMENTS.read_text()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    # No pip in it (uv installs), which also spares ensurepip's seconds.
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)],
                   check=True, timeout=120)
    # The platform's CA store, as `make install` tells uv (a TLS-intercepting proxy's CA is there).
    env = {"UV_SYSTEM_CERTS": "true", **os.environ}
    subprocess.run([find_uv_bin(), "pip", "install", "-q", "--python", str(python),
                    "-r", str(REQUIREMENTS)], check=True, timeout=INSTALL_TIMEOUT_S, env=env)
    stamp.write_text(wanted)
    return python


if __name__ == "__main__":
    print(ensure(Path(sys.argv[1]) if len(sys.argv) > 1 else VENV))
