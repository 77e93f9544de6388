"""A self-signed certificate for 127.0.0.1, made with openssl, for tests of HTTPS."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_cert(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files in ``directory``; the certificate is its own CA."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key
