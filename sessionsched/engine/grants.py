"""Grants: how much of its target each app may hold right now (``SetTarget.grant``).

A target says what an app deserves; executors it is owed may still be held by others that are
being reclaimed. Promising them twice would overcommit the cluster, so, in order:

  1. base(app) = max(held, min(previous grant, target)): what the app keeps in any case
     (an ended app still holding executors: what it holds);
     free = executor capacity - sum of base over every app on the books;
     stays(app) = max(held - executors ordered back, min(previous grant, target)): what it
     keeps once the executors ordered back are gone.
  2. Shrink: if free < 0 (the capacity shrank), grants not yet filled with executors are cut
     back towards what their app holds, lowest rank first, until free >= 0 (a cut only cancels
     executors Spark has not started yet).
  3. Growth: apps with target > stays, in rank order (1. priority, highest first; 2.
     submission sequence; 3. app id): grant = stays + the executors that fit in free (cores,
     memory and each custom resource they ask for), taken from free as they go; with
     workers named, only those that also fit on one worker's free room (``place``:
     ``placement.free_now``). A target raised again while executors ordered back are still
     leaving is growth too: they go all the same.
  4. Every other app: grant = target (at or below its base: executors above it are reclaimed).

Hence, whenever the executors held fit in the capacity, the sum over apps of max(held, grant)
does too: nothing is promised twice while reclaims are in flight. ``Grants`` keeps the sum of
bases, the growing apps and the unfilled grants up to date, so a cycle only touches apps that
changed and apps still waiting to grow.

Reclaim (``reclaim``) reads two more running sums, kept the same way:
  * short: over the apps still growing after step 3, (target - stays) x executor size - what
    free capacity could not grant them (their deficit);
  * freeing: how much the sum of bases drops once the executors already ordered back (and
    every executor of an ended app) are gone: base - stays.
The same three sums in custom resources (GPUs) for the apps whose executors ask for one, so
that reclaim frees a GPU where a GPU is short (``reclaim``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..model import Resources
from ..model.custom import Custom, scaled
from ..model.profiles import held_by_shape
from .ledger import AppRecord


class Grants:
    def __init__(self) -> None:
        self._base: dict[str, tuple[int, int]] = {}  # app -> (base cores, base memory)
        self.cores = 0
        self.mem_mib = 0
        # app -> (rank, base, target, record) of apps whose target is above their base
        self._growing: dict[str, tuple[tuple, int, int, AppRecord]] = {}
        # app -> (rank, base, held, record) of apps granted more than they hold
        self._unfilled: dict[str, tuple[tuple, int, int, AppRecord]] = {}
        # app -> (short cores, short memory, freeing cores, freeing memory), when not all 0
        self._owed: dict[str, tuple[int, int, int, int]] = {}
        self.short_cores = 0
        self.short_mem_mib = 0
        self.freeing_cores = 0
        self.freeing_mem_mib = 0
        # The same for custom resources (GPUs), kept only for apps whose executors ask for one
        # (most have none: nothing is added for them): app -> (base, short, freeing) amounts;
        # the sums, and the cores of the short executors that ask for one.
        self._custom: dict[str, tuple[Custom, Custom, Custom, int]] = {}
        self.custom_base: dict[str, int] = {}
        self.short_custom: dict[str, int] = {}
        self.freeing_custom: dict[str, int] = {}
        self.short_custom_cores = 0

    @property
    def short(self) -> bool:
        """Some app's target is above what it may hold now (it waits for free capacity)."""
        return bool(self._growing)

    def rebase(self, rec: AppRecord, target: int) -> None:
        """Recompute the app's base for ``target`` and its current held and grant."""
        app_id = rec.app_id
        old = self._base.pop(app_id, None)
        if old is not None:
            self.cores -= old[0]
            self.mem_mib -= old[1]
        self._growing.pop(app_id, None)
        self._unfilled.pop(app_id, None)
        owed = self._owed.pop(app_id, None)
        if owed is not None:
            self.short_cores -= owed[0]
            self.short_mem_mib -= owed[1]
            self.freeing_cores -= owed[2]
            self.freeing_mem_mib -= owed[3]
        custom = self._custom.pop(app_id, None)
        if custom is not None:
            self._add_custom(custom, -1)
        if not rec.on_books:
            return
        held = len(rec.executors)
        short = 0
        if rec.state.admitted:
            # Comparisons, not min/max calls: this runs for ~750 apps a busy cycle.
            grant = rec.grant
            kept = grant if grant < target else target
            base = held if held > kept else kept
            left = held - len(rec.reclaiming)
            stays = left if left > kept else kept
            # An app grows from what stays: executors ordered back leave whatever its target
            # does now (Spark cannot call a decommission back), so a target raised again above
            # what stays is new executors, granted out of free room like any other growth.
            if target > stays:
                self._growing[app_id] = (rec.rank, stays, target, rec)
                short = target - stays
            if base > held:
                self._unfilled[app_id] = (rec.rank, base, held, rec)
            freeing = base - stays
        else:
            base = freeing = held
        size = rec.spec.executor
        if size.custom:
            custom = (scaled(size.custom, base), scaled(size.custom, short),
                      scaled(size.custom, freeing), short * size.cores)
            self._custom[app_id] = custom
            self._add_custom(custom, 1)
        cores, mem = base * size.cores, base * size.mem_mib
        if rec.profiles:  # held executors each by their resource profile's shape
            h_cores, h_mem = held_by_shape(rec.executors.values(), rec.profiles, size)
            cores, mem = cores + h_cores - held * size.cores, mem + h_mem - held * size.mem_mib
        self._base[app_id] = (cores, mem)
        self.cores += cores
        self.mem_mib += mem
        if short or freeing:
            owed = (short * size.cores, short * size.mem_mib,
                    freeing * size.cores, freeing * size.mem_mib)
            self._owed[app_id] = owed
            self.short_cores += owed[0]
            self.short_mem_mib += owed[1]
            self.freeing_cores += owed[2]
            self.freeing_mem_mib += owed[3]

    def _add_custom(self, c: tuple[Custom, Custom, Custom, int], sign: int) -> None:
        for sums, amounts in ((self.custom_base, c[0]), (self.short_custom, c[1]),
                              (self.freeing_custom, c[2])):
            for k, v in amounts:
                sums[k] = sums.get(k, 0) + sign * v
        self.short_custom_cores += sign * c[3]

    def free_custom(self, capacity: Resources) -> dict[str, int]:
        """Each custom resource of ``capacity`` (or of a base) less the bases' (below 0 when
        the capacity shrank under them)."""
        free = dict(capacity.custom)
        for name, amount in self.custom_base.items():
            free[name] = free.get(name, 0) - amount
        return free

    def sums(self) -> tuple[int, ...]:
        """Every running sum, to compare with a recount (``selfcheck``)."""
        return (self.cores, self.mem_mib, self.short_cores, self.short_mem_mib,
                self.freeing_cores, self.freeing_mem_mib)

    def grow(self, capacity: Resources,
             place: Callable[[AppRecord, int], int] | None = None) -> dict[str, int]:
        """New grants: of apps cut back because the bases exceed ``capacity``, and of the
        growing apps, in rank order, out of what is free in ``capacity``. ``place`` (workers
        named): how many of an app's next ``n`` executors some worker has room for, taken off
        that room, so room split across workers is not granted."""
        free_cores = capacity.cores - self.cores
        free_mem = capacity.mem_mib - self.mem_mib
        out = {}
        if free_cores < 0 or free_mem < 0:
            unfilled = sorted(self._unfilled.items(), key=lambda kv: kv[1][0], reverse=True)
            for app_id, (_, base, held, rec) in unfilled:
                if free_cores >= 0 and free_mem >= 0:
                    break
                size = rec.spec.executor
                cut = max(_ceil_div(-free_cores, size.cores), _ceil_div(-free_mem, size.mem_mib))
                cut = min(cut, base - held)
                free_cores += cut * size.cores
                free_mem += cut * size.mem_mib
                out[app_id] = base - cut
        # Custom resources (GPUs) free, for the executors that ask for one: with one worker
        # or none named there is no ``place`` to count them, and a GPU granted twice waits.
        free_custom = self.free_custom(capacity)
        growing = sorted(self._growing.items(), key=lambda kv: kv[1][0])
        for app_id, (_, base, target, rec) in growing:
            base = out.get(app_id, base)
            size = rec.spec.executor
            more = min(target - base, max(free_cores, 0) // size.cores)
            if size.mem_mib:
                more = min(more, max(free_mem, 0) // size.mem_mib)
            for name, amount in size.custom:
                more = min(more, max(free_custom.get(name, 0), 0) // amount)
            more = max(more, 0)
            if place is not None and more:
                more = place(rec, more)
            free_cores -= more * size.cores
            free_mem -= more * size.mem_mib
            for name, amount in size.custom:
                free_custom[name] = free_custom.get(name, 0) - more * amount
            out[app_id] = base + more
        return out


def _ceil_div(need: int, size: int) -> int:
    """Executors of ``size`` needed to free ``need`` (0 if nothing is needed)."""
    if need <= 0 or size <= 0:
        return 0
    return -(-need // size)
