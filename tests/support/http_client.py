"""``HTTP``: the one HTTP client of a test process, for the tests' own calls to the servers,
masters and doors they start (``HTTP.get(url, timeout=10)`` where ``httpx.get(url, timeout=10)``
would do the same).

Why not ``httpx.get``: it builds a client for each call, and each client a TLS context with the
CA bundle loaded, ~20 ms of CPU where the call itself takes ~1 ms; tests poll the servers 20
times a second (``tests/sparkcluster.py``'s ``wait_until``), and such polling took a fifth to
half of a core for the whole wait (tests/real_spark/test_two_clusters.py: its pytest process
13.8 s of CPU in a 62 s run). As ``httpx.get`` does, each request opens a connection of its
own and closes it (no keep-alive): a killed or restarted server is met the same way. Calls
that need a TLS setting of their own (``verify=``) still build their client, and so do the
standby tests' bursts of submissions (tests/server/test_standby.py,
tests/server/test_standby_clusters.py): their rate was set with that cost in it."""

from __future__ import annotations

import httpx

HTTP = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))
