"""What a door reads off any request, whatever its protocol."""

from __future__ import annotations

from typing import Any


def sender(request: Any) -> str:
    """``HOST:PORT`` of the peer (``""`` when the server does not know it), for the audit
    trail."""
    client = request.client
    return f"{client.host}:{client.port}" if client else ""
