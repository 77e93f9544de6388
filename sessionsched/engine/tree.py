"""An index over the queue tree: parents, children and paths by name, built once per tree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from ..model import Queue
from ..model.custom import Custom


class Caps(NamedTuple):
    """Caps and guarantees lowered for one step (behind several clusters they move each step:
    ``clusters.cores``, ``clusters.resources``): queue -> ``max_cores``; queue -> the
    ``max_resources`` amounts lowered, queue -> the ``min_resources`` amounts lowered (a
    resource not named keeps the queue's own)."""

    cores: Mapping[str, int] = {}
    custom: Mapping[str, Custom] = {}
    guarantees: Mapping[str, Custom] = {}


def with_caps(root: Queue, caps: Mapping[str, int],
              custom: Mapping[str, Custom] | None = None,
              guarantees: Mapping[str, Custom] | None = None) -> Queue:
    """``root`` with the ``max_cores`` of each queue named in ``caps`` lowered to it, the
    ``max_resources`` of each queue named in ``custom`` and the ``min_resources`` of each
    named in ``guarantees`` (an amount above the queue's own changes nothing; one of a
    resource it does not name is added). The queues beside the lowered ones are the same
    objects; those above them are new ones, with the new children."""
    if not caps and not custom and not guarantees:
        return root
    children = tuple(with_caps(c, caps, custom, guarantees) for c in root.children)
    cap = caps.get(root.name)
    if cap is not None and root.max_cores is not None and root.max_cores <= cap:
        cap = None
    limits = _lowered(root.max_resources, (custom or {}).get(root.name, ()))
    mins = _lowered(root.min_resources, (guarantees or {}).get(root.name, ()))
    if (cap is None and limits is root.max_resources and mins is root.min_resources
            and all(a is b for a, b in zip(children, root.children, strict=True))):
        return root
    return replace(root, children=children, max_cores=root.max_cores if cap is None else cap,
                   max_resources=limits, min_resources=mins)


def _lowered(limits: Custom, caps: Custom) -> Custom:
    """``limits`` with each amount of ``caps`` lowered to it, or added where ``limits`` does
    not name its resource (``limits`` itself, the same object, when nothing changes)."""
    have = dict(limits)
    if all(k in have and have[k] <= v for k, v in caps):
        return limits
    for k, v in caps:
        have[k] = min(v, have.get(k, v))
    return tuple(sorted(have.items()))


class QueueTree:
    """Children in configuration order; ``postorder`` lists children before their parent."""

    # The indexes ``of`` built last, newest last (queues are frozen): one per tree in use -
    # behind several clusters each cluster's engine may have a tree of its own
    # (``clusters.federation``), and their steps take turns.
    _last: list[QueueTree] = []
    _KEPT = 16

    @classmethod
    def of(cls, root: Queue) -> QueueTree:
        """The index of ``root``, built again only when the tree is another object: admission
        and arbitration ask for it every step."""
        kept = cls._last
        if kept and kept[-1].root is root:
            return kept[-1]
        for i, tree in enumerate(kept):
            if tree.root is root:
                kept.append(kept.pop(i))
                return tree
        return cls._keep(cls(root))

    @classmethod
    def _keep(cls, tree: QueueTree) -> QueueTree:
        kept = cls._last
        kept.append(tree)
        del kept[:-cls._KEPT]
        return tree

    def __init__(self, root: Queue):
        self.root = root
        self.node: dict[str, Queue] = {}
        self.children: dict[str, tuple[str, ...]] = {}
        self.path: dict[str, tuple[Queue, ...]] = {}  # leaf -> (root, ..., leaf)
        self.postorder: list[str] = []
        self._walk(root, ())
        self.leaves: tuple[str, ...] = tuple(self.path)
        self.capped_paths: dict[str, tuple[Queue, ...]] = {
            leaf: tuple(q for q in path if q.max_cores is not None)
            for leaf, path in self.path.items()
        }
        self.under_cap: dict[str, list[str]] = {}  # a queue with ``max_cores`` -> its leaves
        for leaf, capped in self.capped_paths.items():
            for q in capped:
                self.under_cap.setdefault(q.name, []).append(leaf)

    def _walk(self, q: Queue, path: tuple[Queue, ...]) -> None:
        path = path + (q,)
        self.node[q.name] = q
        self.children[q.name] = tuple(c.name for c in q.children)
        if q.is_leaf:
            self.path[q.name] = path
        for c in q.children:
            self._walk(c, path)
        self.postorder.append(q.name)

    def recapped(self, caps: Caps) -> QueueTree:
        """The index of this tree with the ``max_cores``, ``max_resources`` and
        ``min_resources`` of the queues named in ``caps`` lowered to them as ``with_caps``
        lowers them, a ``max_cores`` only where the queue has one (behind several clusters
        arbitration's caps and guarantees move each step: they are the capped queues'). Built from
        this one: the lowered queues and the queues above them are new objects (a new root),
        and the leaves below a lowered queue get new paths, in which the queues above it stay
        the old objects (they differ only by their children, which paths are not read for).
        ``of`` finds it from then on."""
        node = self.node
        lowered = {name: cap for name, cap in caps.cores.items()
                   if (m := node[name].max_cores) is not None and cap < m}
        limits = {name: low for name, lower in caps.custom.items()
                  if (low := _lowered(node[name].max_resources, lower))
                  is not node[name].max_resources}
        mins = {name: low for name, lower in caps.guarantees.items()
                if (low := _lowered(node[name].min_resources, lower))
                is not node[name].min_resources}
        if not lowered and not limits and not mins:
            return self
        below = {name: [leaf.name for leaf in node[name].leaves()] for name in (*limits, *mins)}
        below.update((name, self.under_cap[name]) for name in lowered)
        depth: dict[str, int] = {}  # every queue on a path to a lowered one
        for name, leaves in below.items():
            for i, q in enumerate(self.path[leaves[0]]):
                depth[q.name] = i
                if q.name == name:
                    break
        new: dict[str, Queue] = {}
        for name in sorted(depth, key=depth.__getitem__, reverse=True):  # children first
            q = node[name]
            kids = tuple(new.get(c.name, c) for c in q.children)
            new[name] = replace(q, children=kids, max_cores=lowered.get(name, q.max_cores),
                                max_resources=limits.get(name, q.max_resources),
                                min_resources=mins.get(name, q.min_resources))
        tree = object.__new__(QueueTree)
        tree.root, tree.node = new[self.root.name], {**node, **new}
        tree.children, tree.postorder, tree.leaves = self.children, self.postorder, self.leaves
        tree.under_cap = self.under_cap  # the same queues have caps: only their values moved
        tree.path, tree.capped_paths = dict(self.path), dict(self.capped_paths)
        for leaf in {leaf for leaves in below.values() for leaf in leaves}:
            p = tree.path[leaf] = tuple(new[q.name] if q.name in below else q
                                        for q in self.path[leaf])
            tree.capped_paths[leaf] = tuple(q for q in p if q.max_cores is not None)
        return self._keep(tree)

    def capped_path(self, leaf: str) -> tuple[Queue, ...]:
        """The queues on a leaf's path that have a ``max_cores`` cap."""
        return self.capped_paths[leaf]
