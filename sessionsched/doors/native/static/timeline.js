// An app's story, oldest first: its events (docs/user/api.md lists their kinds) in words, with
// what its record adds that no event says (its first executor, its gang's reservation).

import {el, since, span, time} from "./common.js";

const LABELS = {
  submitted: "Submitted", warning: "Warning", priority: "Priority changed",
  kill: "Kill requested", expired: "Expired", launch: "Launched", retry: "Launch retried",
  driver: "Driver running", exit: "Driver exited", agent: "Agent", adopted: "Found again",
  reclaim: "Executors taken back", placed: "Placed on a cluster",
  moved: "Moved off its cluster",
};

// "ACCEPTED -> STARTING: driver launched" is its admission; "-> RUNNING" its first executor
// up; a final state its end.
function stateLabel(detail) {
  const to = (/^\w+ -> (\w+)/.exec(detail) || [])[1];
  if (to === "STARTING") return "Admitted";
  if (to === "RUNNING") return "Running";
  if (["FINISHED", "FAILED", "KILLED"].includes(to)) return "Ended " + to;
  return to ? "Now " + to : "State";
}

export function storyOf(app, events) {
  const items = events.map(e => ({at: e.at, kind: e.kind, detail: e.detail,
    what: e.kind === "state" ? stateLabel(e.detail) : LABELS[e.kind] ?? e.kind}));
  if (app.first_executor_at) {
    items.push({at: app.first_executor_at, kind: "first-executor", what: "First executor",
      detail: ""});
  }
  const r = app.gang && app.gang.reservation;
  if (r && r.since) {
    items.push({at: r.since, kind: "gang-reserved", what: "Gang reservation began",
      detail: r.held_cores + " of " + r.needed_cores + " cores reserved so far"});
  }
  // Stable: equal times keep the events' own order, the record's items after them.
  return items.map((it, i) => [Date.parse(it.at), i, it]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(x => x[2]);
}

export function renderTimeline(list, app, events) {
  const start = Date.parse(app.submitted_at);
  list.replaceChildren(...storyOf(app, events).map(it => {
    const after = (Date.parse(it.at) - start) / 1000;
    return el("li", {class: "kind-" + it.kind, "data-kind": it.kind},
      time(it.at, span(since(it.at)) + " ago"), el("span", {class: "what"}, it.what),
      el("span", {class: "detail"}, it.detail),
      after >= 1 ? el("span", {class: "muted"}, " (+" + span(after) + ")") : "");
  }));
}
