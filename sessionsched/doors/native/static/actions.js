// An app's actions: change its priority, kill it. Each is the native API's own call
// (POST /api/v1/apps/ID/priority and /kill), so the server decides who may, audits it as it
// does the CLI's, and its refusal (the rule it names) is shown as it said it.

import {askForToken, authHeaders} from "./token.js";

const TIMEOUT_MS = 30000;
const ENDED = ["FINISHED", "FAILED", "KILLED"];

// The API's answer: {ok, status, body}; ``body.detail`` is a refusal's sentence.
async function send(url, body) {
  const ctl = new AbortController(), timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const r = await fetch(url, {method: "POST", signal: ctl.signal, cache: "no-store",
      headers: {"Content-Type": "application/json", ...authHeaders()},
      body: body === undefined ? undefined : JSON.stringify(body)});
    let data = null;
    try { data = await r.json(); } catch { data = null; }
    return {ok: r.ok, status: r.status, body: data};
  } finally { clearTimeout(timer); }
}

function refusal(out) {
  const d = out.body && out.body.detail;
  const text = typeof d === "string" ? d : "HTTP " + out.status;
  if (out.status === 401 || out.status === 403) askForToken(text);
  return "Refused: " + text;
}

// ``api``: the app's URL; ``after``: called once an action is done (the page reads again).
export function wireActions(api, after) {
  const result = document.getElementById("action-result");
  const kill = document.getElementById("kill"), sure = document.getElementById("kill-confirm");
  async function act(path, body, done) {
    result.className = "muted";
    result.textContent = "Sending…";
    try {
      const out = await send(api + path, body);
      result.className = out.ok ? "done" : "refused";
      result.textContent = out.ok ? done(out.body) : refusal(out);
    } catch {
      result.className = "refused";
      result.textContent = "scheduler unreachable: nothing was sent, or no answer came";
    }
    after();
  }
  document.getElementById("priority-form").addEventListener("submit", e => {
    e.preventDefault();
    const value = document.getElementById("priority-input").value.trim();
    act("/priority", {priority: value}, app => "Priority set to " + app.priority + ".");
  });
  // Two clicks, no dialog: the first arms the kill, the second sends it.
  kill.addEventListener("click", () => { sure.hidden = false; kill.hidden = true; });
  sure.addEventListener("click", () => {
    sure.hidden = true; kill.hidden = false;
    act("/kill", undefined, app => "Killed: now " + app.state + ".");
  });
}

// Shown while the app lives; its priority as the box's starting value.
export function showActions(app) {
  const input = document.getElementById("priority-input");
  document.getElementById("act").hidden = ENDED.includes(app.state);
  if (document.activeElement !== input && !input.value) input.value = String(app.priority);
}
