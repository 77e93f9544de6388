// An app's executors over time: held, target and wanted. The scheduler keeps no history of
// them (its events say when an app started and ended, not its sizes; its usage keeps only the
// current levels), so the series is the page's own: one point per poll since it was opened,
// the last hour kept.

import {chart, followWidth} from "./chart.js";

const KEEP = 1800;  // an hour of two-second polls
const xs = [], held = [], target = [], wanted = [];

export function recordExecutors(app) {
  xs.push(Date.now() / 1000);
  held.push(app.executors);
  target.push(app.target);
  wanted.push(app.demand);
  if (xs.length > KEEP) for (const a of [xs, held, target, wanted]) a.shift();
  chart(document.getElementById("executors-chart"), xs, [
    {label: "held", values: held, color: "#3a7bd5"},
    {label: "target", values: target, color: "#e08a1e", dash: [6, 4]},
    {label: "wanted", values: wanted, color: "#9bb8e0", dash: [2, 3]}],
  {unit: "executors", steps: true});
}

followWidth(document.getElementById("executors-chart"));
