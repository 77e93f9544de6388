"""JSON over HTTP POST with urllib (standard library: the agent may ship as a bare zip).

Two kinds of failure, because the agent reacts differently:
``Unreachable`` (connection refused, timeout, 5xx: the server is down or busy -- retry later)
and ``Refused`` (a 4xx: the server answered and said no -- e.g. 404 for an app it does not know).
"""

from __future__ import annotations

import json
import logging
import ssl
import urllib.error
import urllib.request

log = logging.getLogger("sessionsched.agent")


class Unreachable(Exception):
    """No usable answer: the server is down, slow or failing. Worth retrying."""


class Refused(Exception):
    """The server answered with a 4xx. ``status`` and ``detail`` say why."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class JsonClient:
    """``base_url``: the scheduler, or several comma-separated (a leader and its standbys,
    ``server.peers``): a request without a usable answer from one -- it is down, or a standby
    redirecting -- goes to the next, and the one that answered is asked first from then on, so
    the agent follows a takeover."""

    def __init__(self, base_url: str, token: str | None = None, timeout_s: float = 5.0,
                 ca: str | None = None, stamp: dict | None = None):
        """``ca``: a CA certificate (PEM) to verify an ``https://`` server with, instead of
        the system's trust store (a private CA's, or a self-signed certificate). A file that
        cannot be read is an ``OSError``/``ssl.SSLError`` here, not at the first report.
        ``stamp``: fields every body carries (the driver's ``attempt``, behind several
        clusters; a server that does not know one ignores it)."""
        self.base_urls = [u.strip().rstrip("/") for u in base_url.split(",") if u.strip()]
        self.base_url = self.base_urls[0] if self.base_urls else base_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self._context = ssl.create_default_context(cafile=ca) if ca else None
        self.stamp = dict(stamp or {})

    def post(self, path: str, body: dict, timeout_s: float | None = None) -> dict:
        """``timeout_s``: this request's, when not the client's (a watch is held open)."""
        order = [self.base_url] + [u for u in self.base_urls if u != self.base_url]
        for i, base in enumerate(order):
            try:
                answer = self._post(base, path, body, timeout_s or self.timeout_s)
            except Unreachable:
                if i + 1 < len(order):
                    continue
                raise
            if base != self.base_url:
                log.warning("sessionsched agent: now reporting to %s", base)
                self.base_url = base
            if log.isEnabledFor(logging.DEBUG):  # what the server took, for a look at the wire
                log.debug("sessionsched agent: sent %s %s", path, json.dumps(body))
            return answer
        raise Unreachable("no scheduler address")

    def _post(self, base: str, path: str, body: dict, timeout_s: float) -> dict:
        data = json.dumps({**body, **self.stamp}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(base + path, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s,
                                        context=self._context) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            detail = _detail(e)
            if 400 <= e.code < 500:
                raise Refused(e.code, detail) from None
            # 5xx, and a standby's 307 (urllib does not follow a POST's): ask the next one.
            raise Unreachable(f"HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            # ValueError: a body that is not JSON (a proxy's error page, a half-written answer).
            raise Unreachable(f"{base}: {getattr(e, 'reason', e)}") from None


def _detail(e: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(e.read() or b"{}")
        return str(body.get("detail") or body.get("message") or e.reason)
    except Exception:
        return str(e.reason)
