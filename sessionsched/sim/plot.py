"""The run as a picture (matplotlib, Agg: no display needed), three panels over time:

1. cores held by in-cluster drivers (hatched, at the bottom) and executor cores per app,
   stacked, against the cluster's cores; a dotted line where an app's priority changed;
2. each app's state as a bar: queued (ACCEPTED), STARTING, RUNNING; nothing once FINISHED,
   red from the end of an app that FAILED (or was KILLED);
3. queue lengths: apps waiting in each leaf queue.

The timeline holds step functions recorded at scheduler cycles (``record.Timeline``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: never look for a display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .record import Series  # noqa: E402
from .result import SimResult  # noqa: E402

STATE_COLORS = {
    "ACCEPTED": "#c7c7c7",
    "STARTING": "#ff9f1c",
    "RUNNING": "#2a9d8f",
    "FAILED": "#e63946",
    "KILLED": "#6d6875",
}
MAX_LEGEND_APPS = 16


def _segments(series: Series, end: float):
    """(start, length, value) runs of a step series up to ``end``."""
    bounds = series.times[1:] + [end]
    return [
        (t, stop - t, v)
        for t, stop, v in zip(series.times, bounds, series.values, strict=True)
        if stop > t
    ]


def _on_grid(series: Series, grid: list[float]) -> list:
    return [series.at(t) or 0 for t in grid]


def _end(result: SimResult) -> float:
    tl = result.timeline
    changes = {t for s in tl.executor_cores.values() for t in s.times}
    changes.update(tl.driver_cores.times)
    return max(result.end_s, max(changes, default=0.0), 1.0)


def _heading(result: SimResult, title: str) -> str:
    s = result.summary
    return (f"{title or 'simulation'}: {s['completed']} finished, {s['stuck']} stuck, "
            f"makespan {s['makespan']:g}s")


def plot(result: SimResult, out: str | Path, title: str = "") -> None:
    names = [a.name for a in result.apps]
    fig, (ax_ex, ax_st, ax_q) = plt.subplots(
        3,
        1,
        sharex=True,
        figsize=(11, 8.5),
        gridspec_kw={"height_ratios": [3, max(1.2, 0.28 * len(names)), 1.4]},
    )
    _draw(result, (ax_ex, ax_st, ax_q), _end(result), legends=True)
    fig.suptitle(_heading(result, title), fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def plot_pair(a: SimResult, b: SimResult, out: str | Path, titles: tuple[str, str]) -> None:
    """Two runs side by side (``simulate --compare``) on one time scale; B's legends only
    (the same apps, in the same colours, when both runs hold the same apps)."""
    rows = max(len(a.apps), len(b.apps))
    fig, axes = plt.subplots(
        3,
        2,
        sharex=True,
        figsize=(18, 8.5),
        gridspec_kw={"height_ratios": [3, max(1.2, 0.28 * rows), 1.4]},
    )
    end = max(_end(a), _end(b))
    for col, (result, title) in enumerate(zip((a, b), titles, strict=True)):
        _draw(result, tuple(axes[:, col]), end, legends=col == 1)
        axes[0, col].set_title(_heading(result, title), fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def _draw(result: SimResult, axes: tuple, end: float, legends: bool) -> None:
    ax_ex, ax_st, ax_q = axes
    tl = result.timeline
    names = [a.name for a in result.apps]
    changes = {t for s in tl.executor_cores.values() for t in s.times}
    changes.update(tl.driver_cores.times)
    times = sorted({t for t in changes if t <= end} | {end})
    cmap = plt.get_cmap("tab20")
    colors = {n: cmap(i % 20) for i, n in enumerate(names)}

    bottom = _on_grid(tl.driver_cores, times)
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
        values = _on_grid(tl.executor_cores[n], times)
        top = [b + v for b, v in zip(bottom, values, strict=True)]
        ax_ex.fill_between(times, bottom, top, step="post", color=colors[n], label=n, lw=0)
        bottom = top
    for n in names:  # priority updates: a dotted line where they happen
        prio = tl.priorities[n]
        for t, before, after in zip(prio.times[1:], prio.values, prio.values[1:], strict=False):
            ax_ex.axvline(t, color="black", ls=":", lw=1)
            ax_ex.annotate(
                f" {n}: {before} → {after}",
                (t, result.cluster_cores * 1.02),
                fontsize=8,
                color="black",
            )
    ax_ex.axhline(result.cluster_cores, color="black", ls="--", lw=1, label="cluster cores")
    ax_ex.set_ylabel("cores")
    ax_ex.set_ylim(0, result.cluster_cores * 1.08)
    handles, labels = ax_ex.get_legend_handles_labels()
    if len(names) > MAX_LEGEND_APPS:
        keep = [i for i, label in enumerate(labels) if label not in colors]
        handles, labels = [handles[i] for i in keep], [labels[i] for i in keep]
    if legends:
        ax_ex.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)

    seen = set()
    for row, n in enumerate(names):
        for start, length, state in _segments(tl.states[n], end):
            if state in STATE_COLORS:
                seen.add(state)
                ax_st.broken_barh([(start, length)], (row - 0.4, 0.8), color=STATE_COLORS[state])
    ax_st.set_yticks(range(len(names)), names, fontsize=8)
    ax_st.set_ylim(len(names) - 0.5, -0.5)
    ax_st.set_ylabel("state")
    if legends:
        ax_st.legend(
            handles=[
                Patch(color=c, label=s)
                for s, c in STATE_COLORS.items()
                if s not in ("FAILED", "KILLED") or s in seen
            ],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
        )

    for q, series in tl.pending.items():
        ax_q.step(series.times + [end], series.values + series.values[-1:], where="post", label=q)
    ax_q.set_ylabel("queued apps")
    ax_q.set_xlabel("time (s)")
    most = max((s.max() for s in tl.pending.values()), default=0)
    ax_q.set_ylim(0, max(most, 1) * 1.15)
    ax_q.yaxis.set_major_locator(MaxNLocator(integer=True))
    if legends:
        ax_q.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax_q.set_xlim(0, end)
