"""The dashboard at ``/``: one static page that polls the native API every two seconds."""

DASHBOARD_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>sessionsched</title>
<style>
 body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
 table{border-collapse:collapse;margin-bottom:1.5em}
 th,td{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left}
 th{background:#f4f4f4} .ACCEPTED{color:#a60} .STARTING{color:#06c} .RUNNING{color:#080}
 .FAILED,.KILLED{color:#b00} #health{margin-bottom:1em}
</style></head>
<body><h1>sessionsched</h1><div id="health"></div>
<h2>Queues</h2><table id="queues"></table>
<h2>Applications</h2><table id="apps"></table>
<script>
const ENT = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"};
const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ENT[c]);
function table(el, cols, rows, cls) {
  el.innerHTML = "<tr>" + cols.map(c => "<th>" + c + "</th>").join("") + "</tr>" +
    rows.map(r => "<tr class='" + (cls ? esc(r[cls]) : "") + "'>" +
      cols.map(c => "<td>" + esc(r[c]) + "</td>").join("") + "</tr>").join("");
}
async function refresh() {
  try {
    const [h, q, a] = await Promise.all(["/api/v1/health", "/api/v1/queues", "/api/v1/apps"]
      .map(u => fetch(u).then(r => r.json())));
    document.getElementById("health").textContent = h.cluster + (h.plan ? " | " + h.plan : "");
    table(document.getElementById("queues"), ["name", "admission", "policy", "weight", "pending",
      "starting", "running", "executor_cores", "demand_cores", "waiting_reason"], q);
    table(document.getElementById("apps"), ["id", "name", "queue", "priority", "state",
      "position", "executors", "target", "demand", "reason"], a.slice(0, 500), "state");
  } catch (e) { document.getElementById("health").textContent = "scheduler unreachable"; }
}
refresh(); setInterval(refresh, 2000);
</script></body></html>
"""
