"""Which failures of a Spark master's REST create may be tried again: only those where the
request surely never reached the master (real sockets on 127.0.0.1, no master)."""

from __future__ import annotations

import socket

import pytest

from sessionsched.backends import master
from sessionsched.backends.base import BackendError, BackendUnavailable
from sessionsched.backends.ports import free_port

CREATE = {"action": "CreateSubmissionRequest", "appResource": "file:/a.jar", "mainClass": "M"}


def test_a_master_that_refuses_the_connection_is_unavailable():
    port = free_port()  # nothing listens there
    client = master.MasterClient(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(BackendUnavailable, match="connection refused"):
            client.create(CREATE)
    finally:
        client.close()


def test_a_create_whose_answer_times_out_is_not_tried_again():
    """The master took the request and did not answer in time: it may have created the
    driver, so the failure is permanent (a second create could run it twice)."""
    with socket.socket() as silent:  # accepts (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client = master.MasterClient(url, url, write_timeout_s=0.5)
        try:
            with pytest.raises(BackendError, match="timed out") as err:
                client.create(CREATE)
            assert not isinstance(err.value, BackendUnavailable)
        finally:
            client.close()
