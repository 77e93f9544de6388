// The cluster: whether it is reachable, what it offers, each worker's cores and memory used
// and free (as its backend last reported), its custom resources (GPUs...: any name the API
// lists in a worker's ``resources`` / ``free_resources``, and the cluster's ``resources``), and
// the scheduler's host as room for drivers; behind several clusters, a row for each.

import {el, fill, mib} from "./common.js";

function usedBar(used, total, label) {
  const box = el("span", {class: "bar", title: label});
  const held = el("div", {class: "held"});
  held.style.width = (total > 0 ? Math.min(100, 100 * used / total) : 0) + "%";
  box.append(held);
  return [box, el("span", {class: "bar-label"}, label)];
}

// "2 gpu (1 used, 1 free)" for each of the cluster's custom resources.
function resourcesLine(resources) {
  return Object.entries(resources || {}).sort().map(([n, r]) => r.capacity + " " + n + " (" +
    r.used + " used" + (r.free != null ? ", " + r.free + " free" : "") + ")").join(", ");
}

// Behind several clusters, each one: whether it answers, what it offers, its apps running
// and queued (hidden with one cluster, which the API lists no ``clusters`` for).
function clustersTable(table, clusters) {
  table.hidden = !clusters;
  if (!clusters) return;
  fill(table, ["Cluster", "Reachable", "Cores", "Memory", "Running", "Queued"],
    clusters.map(k => ({cls: k.reachable ? "" : "unreachable", cells: [k.name,
      k.reachable ? "yes" : "no", String(k.cores), mib(k.memory_mib), String(k.running),
      String(k.queued)]})));
}

export function renderCluster(c) {
  const line = document.getElementById("cluster-line");
  const custom = resourcesLine(c.resources);
  line.textContent = (c.reachable === false ? "Unreachable: " : "") + c.cluster +
    (c.cores ? "; it offers " + c.cores + " cores and " + mib(c.memory_mib) : "") +
    (custom ? "; " + custom : "") + (c.workers.length ? "" : " (no workers named)");
  const names = [...new Set([...Object.keys(c.resources || {}),
    ...c.workers.flatMap(w => Object.keys(w.resources || {}))])].sort();
  const workers = c.workers.map(w => {
    const cores = w.cores - w.free_cores, mem = w.memory_mib - w.free_memory_mib;
    const has = w.resources || {}, free = w.free_resources || {};
    const extra = names.map(n => {
      if (!(n in has)) return el("td", {class: "resource", "data-resource": n}, "");
      const used = has[n] - (free[n] ?? has[n]);
      return el("td", {class: "resource", "data-resource": n},
        usedBar(used, has[n], used + " of " + has[n] + " " + n + " used"));
    });
    const freeText = w.free_cores + (w.free_cores === 1 ? " core, " : " cores, ") +
      mib(w.free_memory_mib) + names.filter(n => n in free).map(n => ", " + free[n] + " " + n)
      .join("");
    return {cells: [w.name,
      el("td", {}, usedBar(cores, w.cores, cores + " of " + w.cores + " cores used")),
      el("td", {}, usedBar(mem, w.memory_mib,
        mib(mem) + " of " + mib(w.memory_mib) + " used")), ...extra, freeText]};
  });
  fill(document.getElementById("workers"), ["Worker", "Cores", "Memory", ...names, "Free"],
    workers);
  clustersTable(document.getElementById("clusters"), c.clusters);
  const h = c.driver_host;
  document.getElementById("driver-room").textContent =
    "Drivers on the scheduler's host: " + h.drivers +
    (h.driver_slots ? " (driver slots: " + h.driver_slots + ")" : "") +
    (h.memory_mib ? "; " + mib(h.used_mib) + " of its " + mib(h.memory_mib) +
      " for drivers held" : "");
}
