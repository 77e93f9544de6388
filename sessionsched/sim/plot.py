"""The run as a picture (matplotlib, Agg: no display needed), three panels over time:

1. cores held by in-cluster drivers (hatched, at the bottom) and executor cores per app,
   stacked, against the cluster's cores;
2. each app's state as a bar: queued (ACCEPTED), STARTING, RUNNING; nothing once FINISHED;
3. queue lengths: apps waiting in each leaf queue.

The timeline holds step samples taken at scheduler cycles (``record.Timeline``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: never look for a display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .result import SimResult  # noqa: E402

STATE_COLORS = {
    "ACCEPTED": "#c7c7c7",
    "STARTING": "#ff9f1c",
    "RUNNING": "#2a9d8f",
    "FAILED": "#e63946",
    "KILLED": "#6d6875",
}
MAX_LEGEND_APPS = 16


def _segments(times: list[float], values: list, end: float):
    """(start, length, value) runs of a step series up to ``end``."""
    out = []
    for i, (t, v) in enumerate(zip(times, values, strict=True)):
        stop = times[i + 1] if i + 1 < len(times) else end
        if out and out[-1][2] == v:
            start, _, _ = out[-1]
            out[-1] = (start, stop - start, v)
        else:
            out.append((t, stop - t, v))
    return out


def plot(result: SimResult, out: str | Path, title: str = "") -> None:
    tl = result.timeline
    end = max(result.end_s, tl.times[-1] if tl.times else 0.0, 1.0)
    times = tl.times + [end]
    names = [a.name for a in result.apps]
    cmap = plt.get_cmap("tab20")
    colors = {n: cmap(i % 20) for i, n in enumerate(names)}

    fig, (ax_ex, ax_st, ax_q) = plt.subplots(
        3,
        1,
        sharex=True,
        figsize=(11, 8.5),
        gridspec_kw={"height_ratios": [3, max(1.2, 0.28 * len(names)), 1.4]},
    )

    bottom = tl.driver_cores + tl.driver_cores[-1:] if tl.driver_cores else [0] * len(times)
    if any(bottom):
        ax_ex.fill_between(
            times,
            0,
            bottom,
            step="post",
            facecolor="none",
            edgecolor="#555555",
            hatch="///",
            lw=0,
            label="in-cluster drivers",
        )
    for n in names:
        series = tl.executor_cores.get(n, [])
        values = series + series[-1:] if series else [0] * len(times)
        top = [b + v for b, v in zip(bottom, values, strict=True)]
        ax_ex.fill_between(times, bottom, top, step="post", color=colors[n], label=n, lw=0)
        bottom = top
    ax_ex.axhline(result.cluster_cores, color="black", ls="--", lw=1, label="cluster cores")
    ax_ex.set_ylabel("cores")
    ax_ex.set_ylim(0, result.cluster_cores * 1.08)
    handles, labels = ax_ex.get_legend_handles_labels()
    if len(names) > MAX_LEGEND_APPS:
        keep = [i for i, label in enumerate(labels) if label not in colors]
        handles, labels = [handles[i] for i in keep], [labels[i] for i in keep]
    ax_ex.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    for row, n in enumerate(names):
        states = tl.states.get(n, [])
        for start, length, state in _segments(tl.times, states, end):
            if state in STATE_COLORS:
                ax_st.broken_barh([(start, length)], (row - 0.4, 0.8), color=STATE_COLORS[state])
    ax_st.set_yticks(range(len(names)), names, fontsize=8)
    ax_st.set_ylim(len(names) - 0.5, -0.5)
    ax_st.set_ylabel("state")
    ax_st.legend(
        handles=[
            Patch(color=c, label=s)
            for s, c in STATE_COLORS.items()
            if s not in ("FAILED", "KILLED")
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )

    for q, series in tl.pending.items():
        ax_q.step(times, series + series[-1:], where="post", label=q)
    ax_q.set_ylabel("queued apps")
    ax_q.set_xlabel("time (s)")
    most = max((max(v) for v in tl.pending.values() if v), default=0)
    ax_q.set_ylim(0, max(most, 1) * 1.15)
    ax_q.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_q.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax_q.set_xlim(0, end)

    s = result.summary
    heading = title or "simulation"
    fig.suptitle(
        f"{heading}: {s['completed']} finished, {s['stuck']} stuck, makespan {s['makespan']:g}s",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
