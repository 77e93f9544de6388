// The cluster: whether it is reachable, what it offers, each worker's cores and memory used
// and free (as its backend last reported), and the scheduler's host as room for drivers.

import {el, fill, mib} from "./common.js";

function usedBar(used, total, label) {
  const box = el("span", {class: "bar", title: label});
  const held = el("div", {class: "held"});
  held.style.width = (total > 0 ? Math.min(100, 100 * used / total) : 0) + "%";
  box.append(held);
  return [box, el("span", {class: "bar-label"}, label)];
}

export function renderCluster(c) {
  const line = document.getElementById("cluster-line");
  line.textContent = (c.reachable === false ? "Unreachable: " : "") + c.cluster +
    (c.cores ? "; it offers " + c.cores + " cores and " + mib(c.memory_mib) : "") +
    (c.workers.length ? "" : " (no workers named)");
  const workers = c.workers.map(w => {
    const cores = w.cores - w.free_cores, mem = w.memory_mib - w.free_memory_mib;
    return {cells: [w.name,
      el("td", {}, usedBar(cores, w.cores, cores + " of " + w.cores + " cores used")),
      el("td", {}, usedBar(mem, w.memory_mib,
        mib(mem) + " of " + mib(w.memory_mib) + " used")),
      w.free_cores + (w.free_cores === 1 ? " core, " : " cores, ") + mib(w.free_memory_mib)]};
  });
  fill(document.getElementById("workers"), ["Worker", "Cores", "Memory", "Free"], workers);
  const h = c.driver_host;
  document.getElementById("driver-room").textContent =
    "Drivers on the scheduler's host: " + h.drivers +
    (h.driver_slots ? " (driver slots: " + h.driver_slots + ")" : "") +
    (h.memory_mib ? "; " + mib(h.used_mib) + " of its " + mib(h.memory_mib) +
      " for drivers held" : "");
}
