// Usage by queue over the last seven days (docs/operator/usage.md defines each figure).

import {el, fill, span} from "./common.js";

const round = v => String(Math.round(v));

export function renderUsage(table, rows) {
  const num = v => el("td", {class: "num"}, v);
  fill(table, ["Queue", {text: "Apps", cls: "num"}, {text: "Core-s held", cls: "num"},
    {text: "Busy", cls: "num"}, {text: "Idle", cls: "num"}, {text: "Lost to reclaim", cls: "num"},
    {text: "GiB-s held", cls: "num"}, {text: "Driver core-s", cls: "num"},
    {text: "Time queued", cls: "num"}], rows.map(u => ({cells: [
    u.queue, num(String(u.apps)), num(round(u.held_core_s)), num(round(u.busy_core_s)),
    num(round(u.idle_core_s)), num(round(u.reclaimed_core_s)), num(round(u.held_gib_s)),
    num(round(u.driver_core_s)), num(span(u.queued_s))]})));
}
