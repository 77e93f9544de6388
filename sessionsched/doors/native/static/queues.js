// The queue tree: a row per queue, indented by depth, with a bar of the executor cores it holds
// over the cores its apps want, its guarantee (min_share) as a tick, on the scale of its cap
// (max_cores) or, without one, of the whole cluster's cores.

import {badge, el, fill} from "./common.js";

const open = new Set();  // waiting reasons expanded

// The bar's scale: the cap, else the cluster; 0 when neither is known (empty bars).
export const scaleOf = (q, clusterCores) => q.max_cores ?? clusterCores ?? 0;
export const percent = (v, scale) => scale > 0 ? Math.min(100, 100 * v / scale) : 0;

function bar(q, clusterCores) {
  const scale = scaleOf(q, clusterCores);
  const part = (cls, v) => {
    const d = el("div", {class: cls});
    d.style.width = percent(v, scale) + "%";
    return d;
  };
  const guarantee = q.min_share > 0 ? el("div", {class: "guarantee"}) : null;
  if (guarantee) guarantee.style.left = percent(q.min_share, scale) + "%";
  const of = q.max_cores != null ? "cap " + q.max_cores : scale ? "cluster " + scale : "no cores";
  const title = q.executor_cores + " executor cores held, " + q.demand_cores + " wanted; " +
    "guarantee " + q.min_share + ", " + (q.max_cores != null ? "cap " + q.max_cores
      : "no cap (scale: the cluster's " + scale + " cores)");
  const box = el("span", {class: "bar", title, "data-scale": scale},
    part("demand", q.demand_cores), part("held", q.executor_cores), guarantee);
  return [box, el("span", {class: "bar-label"}, q.executor_cores + " of " + of)];
}

function decayed(q) {
  if (q.decayed_cores == null) return "";
  const users = q.decayed_users ? Object.entries(q.decayed_users)
    .map(([u, v]) => u + " " + v.toFixed(1)).join(", ") : "";
  return el("span", {title: "past usage decayed with a half-life of " + q.usage_half_life +
    " s" + (users ? "; by user: " + users : "")}, q.decayed_cores.toFixed(1) + " cores");
}

export function renderQueues(table, queues, clusterCores) {
  const heads = ["Queue", "Cores held", {text: "Pending", cls: "num"},
    {text: "Starting", cls: "num"}, {text: "Running", cls: "num"}, "Waiting because",
    "Policy", "Admission", {text: "Weight", cls: "num"}, "Decayed usage"];
  fill(table, heads, queues.map(q => {
    const depth = q.name.split(".").length - 1;
    const name = el("td", {class: q.leaf ? "leaf" : "parent"}, q.name);
    name.style.paddingLeft = (0.6 + 1.2 * depth) + "em";
    const num = v => el("td", {class: "num"}, String(v));
    return {cls: q.leaf ? "leaf" : "parent", cells: [
      name, el("td", {}, bar(q, clusterCores)), num(q.pending), num(q.starting),
      num(q.running),
      badge(q.waiting_reason_code, q.waiting_reason, q.name, open),
      q.policy ?? "", q.admission ?? "", num(q.weight), decayed(q),
    ]};
  }));
}
