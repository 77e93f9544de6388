// The queue tree: a row per queue, indented by depth, with a bar of the executor cores it holds
// over the cores its apps want, its guarantee (min_share) as a tick, on the scale of its cap
// (max_cores) or, without one, of the whole cluster's cores; a bar of the executors' memory
// held and wanted on the scale of the cluster's memory; and one bar per custom resource the
// API lists (``resources``: GPUs...: used, on the scale of the queue's max or the cluster's
// capacity, its min as a tick), whatever its name.

import {badge, el, fill, mib} from "./common.js";

const open = new Set();  // waiting reasons expanded

// The bar's scale: the cap, else the cluster; 0 when neither is known (empty bars).
export const scaleOf = (q, clusterCores) => q.max_cores ?? clusterCores ?? 0;
export const percent = (v, scale) => scale > 0 ? Math.min(100, 100 * v / scale) : 0;

// A bar: ``held`` over ``wanted`` (optional), a tick at ``guarantee`` (optional), on ``scale``.
function bar({held, wanted, guarantee, scale, title, label}) {
  const part = (cls, v) => {
    const d = el("div", {class: cls});
    d.style.width = percent(v, scale) + "%";
    return d;
  };
  const tick = guarantee > 0 ? el("div", {class: "guarantee"}) : null;
  if (tick) tick.style.left = percent(guarantee, scale) + "%";
  const box = el("span", {class: "bar", title, "data-scale": scale},
    wanted != null ? part("demand", wanted) : null, part("held", held), tick);
  return [box, el("span", {class: "bar-label"}, label)];
}

function coresBar(q, clusterCores) {
  const scale = scaleOf(q, clusterCores);
  const of = q.max_cores != null ? "cap " + q.max_cores : scale ? "cluster " + scale : "no cores";
  const title = q.executor_cores + " executor cores held, " + q.demand_cores + " wanted; " +
    "guarantee " + q.min_share + ", " + (q.max_cores != null ? "cap " + q.max_cores
      : "no cap (scale: the cluster's " + scale + " cores)");
  return bar({held: q.executor_cores, wanted: q.demand_cores, guarantee: q.min_share, scale,
    title, label: q.executor_cores + " of " + of});
}

function memoryBar(q, clusterMemory) {
  if (q.executor_memory_mib == null) return "";
  const scale = clusterMemory || 0;
  return bar({held: q.executor_memory_mib, wanted: q.demand_memory_mib, scale,
    title: mib(q.executor_memory_mib) + " of executor memory held, " +
      mib(q.demand_memory_mib ?? 0) + " wanted (scale: the cluster's " + mib(scale) + ")",
    label: mib(q.executor_memory_mib) + (scale ? " of " + mib(scale) : "")});
}

// A custom resource's bar: ``r`` is {used, max, min} (max, min: null when the queue sets none).
function resourceBar(name, r, capacity) {
  if (!r) return "";
  const scale = r.max ?? capacity ?? 0;
  const of = r.max != null ? "cap " + r.max : scale ? "cluster " + scale : "none";
  return bar({held: r.used, guarantee: r.min ?? 0, scale,
    title: r.used + " " + name + " held; " + (r.min != null ? "guarantee " + r.min + ", " : "") +
      (r.max != null ? "cap " + r.max : "no cap (scale: the cluster's " + scale + ")"),
    label: r.used + " of " + of});
}

// The custom resources' names: the cluster's, and any a queue lists.
export function resourceNames(queues, cluster) {
  const names = new Set(Object.keys((cluster && cluster.resources) || {}));
  for (const q of queues) for (const n of Object.keys(q.resources || {})) names.add(n);
  return [...names].sort();
}

function decayed(q) {
  if (q.decayed_cores == null) return "";
  const users = q.decayed_users ? Object.entries(q.decayed_users)
    .map(([u, v]) => u + " " + v.toFixed(1)).join(", ") : "";
  return el("span", {title: "past usage decayed with a half-life of " + q.usage_half_life +
    " s" + (users ? "; by user: " + users : "")}, q.decayed_cores.toFixed(1) + " cores");
}

// ``cluster``: GET /api/v1/cluster's answer (its memory and custom resources' scales).
export function renderQueues(table, queues, clusterCores, cluster) {
  const names = resourceNames(queues, cluster);
  const capacity = n => ((cluster && cluster.resources) || {})[n]?.capacity;
  const heads = ["Queue", "Cores held", "Memory held", ...names.map(n => n + " held"),
    {text: "Pending", cls: "num"}, {text: "Starting", cls: "num"},
    {text: "Running", cls: "num"}, "Waiting because", "Policy", "Admission",
    {text: "Weight", cls: "num"}, "Decayed usage"];
  fill(table, heads, queues.map(q => {
    const depth = q.name.split(".").length - 1;
    const name = el("td", {class: q.leaf ? "leaf" : "parent"}, q.name);
    name.style.paddingLeft = (0.6 + 1.2 * depth) + "em";
    const num = v => el("td", {class: "num"}, String(v));
    return {cls: q.leaf ? "leaf" : "parent", cells: [
      name, el("td", {}, coresBar(q, clusterCores)),
      el("td", {class: "memory"}, memoryBar(q, cluster && cluster.memory_mib)),
      ...names.map(n => el("td", {class: "resource", "data-resource": n},
        resourceBar(n, (q.resources || {})[n], capacity(n)))),
      num(q.pending), num(q.starting), num(q.running),
      badge(q.waiting_reason_code, q.waiting_reason, q.name, open),
      q.policy ?? "", q.admission ?? "", num(q.weight), decayed(q),
    ]};
  }));
}
