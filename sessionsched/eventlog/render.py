"""A workload (its cluster, queues and app entries) -> the YAML text ``sessionsched simulate``
reads, with comments saying where it came from: a header, and above each app the notes of its
entry (``app_entry.Entry``)."""

from __future__ import annotations

import yaml

from .app_entry import Entry


def _flow(value: object) -> str:
    """``value`` in YAML's flow style on one line (inside a list, so that a plain scalar gets
    no document-end marker)."""
    return yaml.safe_dump([value], default_flow_style=True, sort_keys=False,
                          width=10**6).strip()[1:-1]


def render(header: list[str], cluster: dict, queues: list, entries: list[Entry],
           start: str | None = None) -> str:
    lines = [f"# {h}" if h else "#" for h in header]
    if start is not None:
        lines.append(f"start: {_flow(start)}")
    lines.append(f"cluster: {_flow(cluster)}")
    lines.append(yaml.safe_dump({"queues": queues}, sort_keys=False,
                                default_flow_style=None, width=100).rstrip())
    lines.append("apps:")
    for entry in entries:
        lines += [f"  # {note}" for note in entry.notes]
        app = dict(entry.app)
        stages = app.pop("stages")
        conf = app.pop("conf", None)
        head = [f"{k}: {_flow(v)}" for k, v in app.items()]
        lines.append(f"  - {head[0]}")
        lines += [f"    {h}" for h in head[1:]]
        if conf:
            lines.append(f"    conf: {_flow(conf)}")
        if not stages:
            lines.append("    stages: []")
            continue
        lines.append("    stages:")
        lines += [f"      - {_flow(s)}" for s in stages]
    return "\n".join(lines) + "\n"
