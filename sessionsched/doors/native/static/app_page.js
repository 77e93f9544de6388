// One app's page at /app/ID: its facts (its cluster behind several), its timeline, why it
// waits (who is ahead, who runs in its queue) or holds fewer executors than it wants, what it
// used, its audit rows, a link to its Spark UI where known, its executors over time
// (executors.js) and its actions (actions.js). The app is read every two seconds; its events
// when it changed; usage and audit every thirty, and at once after an action.

import {HttpError, appLink, el, fill, gangText, get, healthLine, poll, since, span,
  startsAt, time} from "./common.js";
import {showActions, wireActions} from "./actions.js";
import {recordExecutors} from "./executors.js";
import {renderTimeline} from "./timeline.js";

const ID = decodeURIComponent(location.pathname.replace(/^\/app\//, ""));
const API = "/api/v1/apps/" + encodeURIComponent(ID);
const POLL_MS = 2000, SLOW_MS = 30000, LISTED = 10;
let seen = "", events = [], slowAt = -Infinity, sparkUi = null;

const when = iso => iso ? time(iso, span(since(iso)) + " ago") : "";

// The standalone master's page of the app; only an http(s) address becomes a link.
function sparkLink(app) {
  if (!app.spark_app_id) return "";
  if (!sparkUi) return app.spark_app_id;
  const url = new URL("app/?appId=" + encodeURIComponent(app.spark_app_id),
    sparkUi.endsWith("/") ? sparkUi : sparkUi + "/");
  if (url.protocol !== "http:" && url.protocol !== "https:") return app.spark_app_id;
  return el("a", {href: url.href, rel: "noopener noreferrer"}, app.spark_app_id);
}

function facts(app) {
  // Cluster: behind several clusters, once placed (absent otherwise: the row is left out).
  const rows = [["Name", app.name], ["User", app.user], ["Queue", app.queue],
    ["Cluster", app.cluster ?? ""], ["Priority", String(app.priority)],
    ["State", el("span", {class: "state state-" + app.state}, app.state)],
    ["Kind", app.kind], ["Submitted", when(app.submitted_at)], ["Started", when(app.started_at)],
    ["Ended", when(app.finished_at)], ["Exit code", app.exit_code ?? ""],
    ["Executors", app.executors + " held, " + app.grant + " granted, " + app.target + " target, " +
      app.demand + " wanted"],
    ["Spark application", sparkLink(app)], ["Gang", gangText(app.gang)],
    ["Warnings", app.warnings.join("; ")]];
  return rows.filter(([, v]) => v !== "" && v !== null)
    .flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]);
}

const size = a => a.executors + "/" + a.target + "/" + a.demand;

function listed(title, apps, line) {
  const items = apps.slice(0, LISTED).map(a => el("li", {}, line(a)));
  if (apps.length > LISTED) items.push(el("li", {}, "… and " + (apps.length - LISTED) + " more"));
  const note = apps.length ? " (executors held/target/wanted)" : "";
  return [el("p", {}, title + ": " + apps.length + note),
    apps.length ? el("ul", {class: "plain"}, items) : ""];
}

// ``sessionsched why``'s answer (commands/inspect.py), drawn. An app that runs: its executors,
// and the server's notes on why it holds fewer than it wants (model/executor_notes.py).
function why(app, queueApps) {
  if (app.state !== "ACCEPTED") {
    const out = [el("p", {}, "Not waiting" + (app.reason ? ": " + app.reason : ""))];
    if (app.state !== "STARTING" && app.state !== "RUNNING") return out;
    out.push(el("p", {}, "Executors: " + app.executors + " held, " + app.grant +
      " granted, target " + app.target + ", demand " + app.demand));
    return out.concat((app.executor_notes || []).map(n =>
      el("p", {class: "note", "data-code": n.code}, n.text)));
  }
  const ahead = queueApps.filter(a => a.state === "ACCEPTED" && a.position && app.position &&
    a.position < app.position);
  const running = queueApps.filter(a => a.state === "STARTING" || a.state === "RUNNING");
  return [
    el("p", {}, "Waiting" + (app.position ? ", position " + app.position + " in " + app.queue
      : " in " + app.queue) + ": ",
      el("span", {class: "badge", title: app.reason}, app.reason_code || "waiting")),
    el("p", {class: "muted"}, app.reason),
    ...listed("Ahead of it in " + app.queue, ahead, a => [a.position + ". ", appLink(a.id),
      " " + a.name + ", priority " + a.priority + ", " + size(a)]),
    ...listed("Running in " + app.queue, running, a => [appLink(a.id),
      " " + a.name + " " + a.state + ", priority " + a.priority + ", " + size(a) +
      (a.cluster ? ", on cluster " + a.cluster : "")]),
    el("p", {}, "Estimated start: ", startsAt(app.estimated_start) || "not estimated yet"),
    el("p", {}, "Counter-offer: " + (app.counter_offer ? app.counter_offer.text : "none")),
  ];
}

function usage(rows) {
  const u = rows.find(r => r.app === ID);
  const num = v => el("td", {class: "num"}, String(Math.round(v)));
  fill(document.getElementById("app-usage"), ["Core-s held", "Busy", "Idle", "Lost to reclaim",
    "Executors reclaimed", "GiB-s held", "Driver core-s", "Time queued"].map(
    t => ({text: t, cls: "num"})), u ? [{cells: [num(u.held_core_s), num(u.busy_core_s),
    num(u.idle_core_s), num(u.reclaimed_core_s), num(u.reclaimed_executors), num(u.held_gib_s),
    num(u.driver_core_s), el("td", {class: "num"}, span(u.queued_s))]}] : []);
}

async function audit() {
  const table = document.getElementById("audit");
  try {
    const rows = await get("/api/v1/audit?app=" + encodeURIComponent(ID));
    fill(table, ["When", "What", "Who", "Detail", "From"], rows.map(r => ({cells: [
      when(r.at), r.kind, r.actor ?? r.who, el("td", {class: "wrap"}, r.detail),
      r.sender ?? ""]})));
  } catch (e) {
    if (!(e instanceof HttpError) || e.status !== 403) throw e;
    table.replaceChildren(el("caption", {class: "muted"},
      "The audit trail is the admins' to read."));
  }
}

async function refresh(health) {
  let app;
  try {
    [app] = await Promise.all([get(API), get("/api/v1/health").then(h => {
      health.textContent = healthLine(h);
    })]);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) throw new HttpError("no app " + ID, 404);
    throw e;
  }
  document.getElementById("title").textContent = app.name + " (" + app.id + ")";
  document.title = app.name + " - sessionsched";
  document.getElementById("facts").replaceChildren(...facts(app));
  showActions(app);
  recordExecutors(app);
  const queueApps = app.state === "ACCEPTED"
    ? await get("/api/v1/apps?queue=" + encodeURIComponent(app.queue)) : [];
  document.getElementById("why").replaceChildren(...why(app, queueApps));
  const slow = Date.now() - slowAt >= SLOW_MS, key = JSON.stringify(app);
  if (key !== seen || slow) {
    events = await get(API + "/events");
    seen = key;
  }
  renderTimeline(document.getElementById("timeline"), app, events);  // "ago" moves on
  if (slow) {
    const [cluster, rows] = await Promise.all([get("/api/v1/cluster"),
      get("/api/v1/usage?by=app&since=" + encodeURIComponent(app.submitted_at))]);
    sparkUi = cluster.spark_ui;
    usage(rows);
    await audit();
    slowAt = Date.now();
    document.getElementById("facts").replaceChildren(...facts(app));
  }
}

const readNow = poll(refresh, POLL_MS);
wireActions(API, () => { slowAt = -Infinity; readNow(); });  // its audit row too
