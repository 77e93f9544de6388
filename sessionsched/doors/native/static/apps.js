// The apps table: filtered by queue, user and state and searched by id or name by the server
// (the overview's apps parameters: doors/native/apps_page.py), which sends the first rows
// that match, queued apps first in queue order as the API lists them, and the counts: the
// page is not sent the whole list each poll (thousands of apps in a busy cluster).

import {appLink, badge, el, fill, gangText, since, span, startsAt, time} from "./common.js";

const PAGE = 100;  // rows asked for at first, and more each "show more"
let shown = PAGE;
const STATES = ["ACCEPTED", "STARTING", "RUNNING", "FINISHED", "FAILED", "KILLED"];
const open = new Set();  // reasons expanded

// A select's options made the given values (its choice kept), "all" first.
function options(select, values) {
  const chosen = select.value;
  const all = ["", ...values];
  if (chosen && !all.includes(chosen)) all.push(chosen);
  const same = select.options.length === all.length &&
    all.every((v, i) => select.options[i].value === v);
  if (!same) {
    select.replaceChildren(...all.map(v => el("option", {value: v}, v || "all")));
    select.value = chosen;
  }
}

export function wireFilters(onChange) {
  for (const id of ["f-queue", "f-user", "f-state"]) {
    document.getElementById(id).addEventListener("change", onChange);
  }
  document.getElementById("f-search").addEventListener("input", onChange);
  document.getElementById("apps-more").addEventListener("click", () => {
    shown += PAGE;
    onChange();
  });
}

// The overview's query string for the table's choices (the same choices, the same string:
// pages with the same ones share the server's answer).
export function appsQuery() {
  const q = new URLSearchParams();
  for (const [name, id] of [["queue", "f-queue"], ["user", "f-user"], ["state", "f-state"],
    ["search", "f-search"]]) {
    const v = document.getElementById(id).value.trim();
    if (v) q.set(name, v);
  }
  q.set("limit", String(shown));
  return q.toString();
}

// "queued 3 min", "starting 20 s", "running 5 min", "ended 2 h ago"; the time on hover.
function ageOf(a) {
  if (a.state === "ACCEPTED") return time(a.submitted_at, "queued " + span(since(a.submitted_at)));
  if (a.finished_at) return time(a.finished_at, "ended " + span(since(a.finished_at)) + " ago");
  const at = a.started_at ?? a.submitted_at;
  return time(at, a.state.toLowerCase() + " " + span(since(at)));
}

// A running app short of executors: its one code (docs/user/watching.md#why-an-app-waits) as a
// badge, the resource named; its page has the notes with the numbers.
const WAITS = {
  resource_short: r => "its executors wait for " + r + ": no worker has it free for one",
  room_short: () => "its executors wait for room (cores, memory) on the workers",
  target_below_demand: () => "its queue's policy divides the queue's executors among its apps",
  executors_starting: () => "granted executors starting",
};

function executorWait(a, open) {
  const code = a.executor_wait_code;
  if (!code) return "";
  const r = a.executor_wait_resource;
  const say = WAITS[code];
  return badge(r ? code + "(" + r + ")" : code, say ? say(r) : code, a.id, open);
}

// ``o``: the overview asked with ``appsQuery()``: its ``apps`` (the first that match),
// ``apps_matched``, ``apps_total``, ``apps_users`` and ``cluster`` (several clusters: a
// Cluster column).
export function renderApps(table, o, leaves) {
  options(document.getElementById("f-queue"), leaves);
  options(document.getElementById("f-user"), o.apps_users);
  options(document.getElementById("f-state"), STATES);
  const found = o.apps, matched = o.apps_matched, total = o.apps_total;
  document.getElementById("apps-count").textContent = (matched === total
    ? total + " apps" : matched + " of " + total + " apps match") +
    (found.length < matched ? "; the first " + found.length + " shown" : "");
  const more = document.getElementById("apps-more");
  more.hidden = found.length >= matched;
  more.textContent = "Show " + Math.min(PAGE, matched - found.length) + " more";
  const num = v => el("td", {class: "num"}, v === null || v === undefined ? "" : String(v));
  // Behind several clusters (the cluster view lists them) each placed app's; none with one.
  const several = Boolean(o.cluster && o.cluster.clusters);
  fill(table, ["ID", "Name", "User", "Queue", ...(several ? ["Cluster"] : []),
    {text: "Priority", cls: "num"}, "State",
    {text: "Position", cls: "num"}, {text: "Executors", cls: "num"}, "Time", "Starts",
    "Reason", "Gang", "Counter-offer"], found.map(a => ({cls: a.state, cells: [
    appLink(a.id), a.name, a.user, a.queue, ...(several ? [a.cluster ?? ""] : []),
    num(a.priority),
    el("span", {class: "state state-" + a.state}, a.state), num(a.position),
    el("td", {class: "num", title: "held / target / wanted"},
      a.executors + " / " + a.target + " / " + a.demand),
    ageOf(a), startsAt(a.estimated_start),
    a.state === "ACCEPTED" ? badge(a.reason_code, a.reason, a.id, open) : executorWait(a, open),
    gangText(a.gang),
    a.counter_offer ? el("td", {class: "wrap"}, a.counter_offer.text) : "",
  ]})));
}
