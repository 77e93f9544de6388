// The apps table: filtered by queue, user and state and searched by id or name in the page
// (the list is read whole each poll), queued apps first in queue order as the API lists them.

import {appLink, badge, el, fill, gangText, since, span, startsAt, time} from "./common.js";

const SHOWN = 500;  // rows drawn at most (the count says how many match)
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
}

function matches(a, f) {
  if (f.queue && a.queue !== f.queue) return false;
  if (f.user && a.user !== f.user) return false;
  if (f.state && a.state !== f.state) return false;
  return !f.text || a.id.toLowerCase().includes(f.text) || a.name.toLowerCase().includes(f.text);
}

// "queued 3 min", "starting 20 s", "running 5 min", "ended 2 h ago"; the time on hover.
function ageOf(a) {
  if (a.state === "ACCEPTED") return time(a.submitted_at, "queued " + span(since(a.submitted_at)));
  if (a.finished_at) return time(a.finished_at, "ended " + span(since(a.finished_at)) + " ago");
  const at = a.started_at ?? a.submitted_at;
  return time(at, a.state.toLowerCase() + " " + span(since(at)));
}

export function renderApps(table, apps, leaves) {
  const f = {queue: document.getElementById("f-queue").value,
    user: document.getElementById("f-user").value,
    state: document.getElementById("f-state").value,
    text: document.getElementById("f-search").value.trim().toLowerCase()};
  options(document.getElementById("f-queue"), leaves);
  const users = new Set(apps.map(a => a.user).filter(Boolean));
  options(document.getElementById("f-user"), [...users].sort());
  options(document.getElementById("f-state"), STATES);
  const found = apps.filter(a => matches(a, f));
  document.getElementById("apps-count").textContent = found.length === apps.length
    ? apps.length + " apps" : found.length + " of " + apps.length + " apps match";
  const num = v => el("td", {class: "num"}, v === null || v === undefined ? "" : String(v));
  fill(table, ["ID", "Name", "User", "Queue", {text: "Priority", cls: "num"}, "State",
    {text: "Position", cls: "num"}, {text: "Executors", cls: "num"}, "Time", "Starts",
    "Reason", "Gang", "Counter-offer"], found.slice(0, SHOWN).map(a => ({cls: a.state, cells: [
    appLink(a.id), a.name, a.user, a.queue, num(a.priority),
    el("span", {class: "state state-" + a.state}, a.state), num(a.position),
    el("td", {class: "num", title: "held / target / wanted"},
      a.executors + " / " + a.target + " / " + a.demand),
    ageOf(a), startsAt(a.estimated_start),
    a.state === "ACCEPTED" ? badge(a.reason_code, a.reason, a.id, open) : "",
    gangText(a.gang),
    a.counter_offer ? el("td", {class: "wrap"}, a.counter_offer.text) : "",
  ]})));
}
