// Usage over time (docs/operator/usage.md defines each figure): per queue or per user, one
// figure (held, busy, idle or lost to reclaim) as a stacked chart over the last day by hour, or
// the last 7 or 30 days by day, with the window's totals below. Each bar of time is one read of
// GET /api/v1/usage with its own since/until (the store's hourly rollup answers it): a closed
// one is read once and kept, the one still open again at each refresh. Up to ten seconds old
// will do (``USAGE_AGE_S``): fifty pages open read the store once for the same stretch.

import {el, fill, get, span} from "./common.js";
import {chart, followWidth} from "./chart.js";

const HOUR = 3600, DAY = 86400, FORGET_MS = 10 * 60 * 1000, USAGE_AGE_S = 10;
const SPANS = {"24h": [24, HOUR, "last 24 hours, by hour"], "7d": [7, DAY, "last 7 days, by day"],
  "30d": [30, DAY, "last 30 days, by day"]};
const FIGURES = {held: ["held_core_s", "held"], busy: ["busy_core_s", "busy"],
  idle: ["idle_core_s", "idle"], lost: ["reclaimed_core_s", "lost to reclaim"]};
const kept = new Map();  // "by|start|length" -> rows of a closed stretch of time
let keptAt = Date.now();

const choice = id => document.getElementById(id).value;

async function stretch(by, start, length, now) {
  const key = by + "|" + start + "|" + length;
  if (kept.has(key)) return kept.get(key);
  const rows = await get("/api/v1/usage?by=" + by + "&since=" + start + "&until=" +
    (start + length), {maxAge: USAGE_AGE_S});
  if (start + length <= now) kept.set(key, rows);
  return rows;
}

// Reads and draws; a call while one runs makes that one run again once it ends (the choices
// may have changed meanwhile), so the last choice is always the one drawn.
let running = null, again = false;
export async function refreshUsage() {
  if (running) { again = true; return running; }
  running = (async () => { do { again = false; await draw(); } while (again); })();
  try { await running; } finally { running = null; }
}

async function draw() {
  if (Date.now() - keptAt > FORGET_MS) { kept.clear(); keptAt = Date.now(); }
  const by = choice("u-by"), figure = choice("u-figure"), [count, length, words] =
    SPANS[choice("u-span")];
  const now = Date.now() / 1000, end = Math.floor(now / HOUR) * HOUR + HOUR;
  const starts = Array.from({length: count}, (_, i) => end - (count - i) * length);
  const [parts, totals] = await Promise.all([
    Promise.all(starts.map(s => stretch(by, s, length, now))),
    get("/api/v1/usage?by=" + by + "&since=" + starts[0], {maxAge: USAGE_AGE_S})]);
  const [field, label] = FIGURES[figure];
  const names = [...new Set(parts.flat().map(r => r[by]))].sort();
  const series = names.map(n => ({label: n, values: parts.map(rows =>
    (rows.find(r => r[by] === n) || {})[field] / HOUR || 0)}));
  document.getElementById("usage-caption").textContent = "Core-hours " + label + " per " + by +
    ", " + words + "; stacked (a bar's top is all of them).";
  chart(document.getElementById("usage-chart"), starts.map(s => s + length / 2), series,
    {stack: true, bars: true, range: [starts[0], end], unit: "core-hours",
      fmt: v => v.toFixed(2)});
  renderTotals(document.getElementById("usage"), by, totals);
}

const round = v => String(Math.round(v));
const COLUMNS = ["held_core_s", "busy_core_s", "idle_core_s", "reclaimed_core_s", "held_gib_s",
  "driver_core_s"];

// The window's figures per queue or user, and their sum in the table's foot.
export function renderTotals(table, by, rows) {
  const num = v => el("td", {class: "num"}, v);
  const head = (t, cls) => ({text: t, cls: cls});
  fill(table, [by === "user" ? "User" : "Queue", head("Apps", "num"),
    head("Core-s held", "num"), head("Busy", "num"), head("Idle", "num"),
    head("Lost to reclaim", "num"), head("GiB-s held", "num"), head("Driver core-s", "num"),
    head("Time queued", "num")], rows.map(u => ({cells: [u[by], num(String(u.apps)),
    ...COLUMNS.map(c => num(round(u[c]))), num(span(u.queued_s))]})));
  const sum = c => rows.reduce((a, u) => a + u[c], 0);
  table.append(el("tfoot", {}, el("tr", {}, el("th", {}, "Total"),
    el("th", {class: "num"}, String(sum("apps"))),
    ...COLUMNS.map(c => el("th", {class: "num"}, round(sum(c)))),
    el("th", {class: "num"}, span(sum("queued_s"))))));
}

export function wireUsage() {
  for (const id of ["u-by", "u-figure", "u-span"]) {  // a failed read shows at the next poll
    document.getElementById(id).addEventListener("change", () => refreshUsage().catch(() => {}));
  }
  followWidth(document.getElementById("usage-chart"));
}
