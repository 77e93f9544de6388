"""The dashboard at ``/``: one static page that polls the native API every two seconds (the
usage table, read from the store, every thirty: docs/operator/usage.md).

Every value is escaped before it goes into the tables. Polls do not overlap (the next starts two
seconds after the last ended), and each request gives up after five seconds, so a scheduler that
stops answering shows as unreachable instead of leaving the last tables up as if all were well.

With auth on, open ``/#token=TOKEN``: the fragment never reaches the server or its logs; the
page keeps the token in the tab's sessionStorage and sends it as ``Authorization: Bearer``.
"""

DASHBOARD_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>sessionsched</title>
<style>
 body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
 table{border-collapse:collapse;margin-bottom:1.5em}
 th,td{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left}
 th{background:#f4f4f4} .ACCEPTED{color:#a60} .STARTING{color:#06c} .RUNNING{color:#080}
 .FAILED,.KILLED{color:#b00} #health{margin-bottom:1em}
 .stale table{opacity:.45}
</style></head>
<body><h1>sessionsched</h1><div id="health"></div>
<h2>Queues</h2><table id="queues"></table>
<h2>Applications</h2><table id="apps"></table>
<h2>Usage by queue, last 7 days</h2><table id="usage"></table>
<script>
const ENT = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ENT[c]);
const POLL_MS = 2000, TIMEOUT_MS = 5000, USAGE_MS = 30000;
let usageAt = -Infinity;  // the usage table reads the store: every 30 s, not every poll
class HttpError extends Error {}
if (location.hash.startsWith("#token=")) {
  sessionStorage.setItem("token", decodeURIComponent(location.hash.slice(7)));
  history.replaceState(null, "", location.pathname);
}
const TOKEN = sessionStorage.getItem("token");
function table(el, cols, rows, cls) {
  el.innerHTML = "<tr>" + cols.map(c => "<th>" + c + "</th>").join("") + "</tr>" +
    rows.map(r => "<tr class='" + (cls ? esc(r[cls]) : "") + "'>" +
      cols.map(c => "<td>" + esc(r[c]) + "</td>").join("") + "</tr>").join("");
}
async function get(u) {
  const ctl = new AbortController(), timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const headers = TOKEN ? {Authorization: "Bearer " + TOKEN} : {};
    const r = await fetch(u, {signal: ctl.signal, cache: "no-store", headers});
    if (r.status === 401) throw new HttpError("a token is needed: open /#token=YOUR_TOKEN");
    if (!r.ok) throw new HttpError("scheduler error: HTTP " + r.status + " from " + u);
    return await r.json();
  } finally { clearTimeout(timer); }
}
function gang(g) {  // "8" or, while it reserves, "8: 4/9 cores reserved, 14m50s left"
  if (!g) return "";
  const r = g.reservation;
  if (!r) return String(g.executors);
  const held = g.executors + ": " + r.held_cores + "/" + r.needed_cores + " cores reserved";
  if (!r.deadline) return held;
  const left = Math.max(0, Math.round((Date.parse(r.deadline) - Date.now()) / 1000));
  const m = Math.floor(left / 60), s = left % 60;
  return held + ", " + (m ? m + "m" : "") + s + "s left";
}
async function refresh() {
  const health = document.getElementById("health");
  try {
    const [h, q, a] = await Promise.all(["/api/v1/health", "/api/v1/queues", "/api/v1/apps"]
      .map(get));
    health.textContent = h.cluster + (h.plan ? " | " + h.plan : "");
    table(document.getElementById("queues"), ["name", "admission", "policy", "weight", "pending",
      "starting", "running", "executor_cores", "demand_cores", "waiting_reason_code",
      "waiting_reason"], q);
    const apps = a.slice(0, 500).map(r => ({...r, estimated_start: r.estimated_start ?? "",
      counter_offer: r.counter_offer ? r.counter_offer.text : "", gang: gang(r.gang)}));
    table(document.getElementById("apps"), ["id", "name", "queue", "priority", "state",
      "position", "executors", "target", "demand", "gang", "reason_code", "reason",
      "estimated_start", "counter_offer"], apps, "state");
    if (Date.now() - usageAt >= USAGE_MS) {
      const u = await get("/api/v1/usage?by=queue&since=7d");
      usageAt = Date.now();
      table(document.getElementById("usage"), ["queue", "apps", "held_core_s", "busy_core_s",
        "idle_core_s", "reclaimed_core_s", "held_gib_s", "driver_core_s", "queued_s"], u);
    }
    document.body.classList.remove("stale");
  } catch (e) {
    health.textContent = e instanceof HttpError ? e.message : "scheduler unreachable";
    document.body.classList.add("stale");
  }
}
async function poll() {
  try { await refresh(); } finally { setTimeout(poll, POLL_MS); }
}
poll();
</script></body></html>
"""
