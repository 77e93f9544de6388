// What every dashboard page shares: the token, reads of the native API with a timeout, DOM
// built from text only (data never becomes markup), human times, reason badges, the poll loop.

import {askForToken, authHeaders} from "./token.js";

export class HttpError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

const TIMEOUT_MS = 5000;  // a scheduler that stops answering shows as unreachable
// url -> [ETag, answer]: the server answers 304 to a read it would answer the same again, and
// the answer kept is used (the shared reads: doors/native/shared_answers.py).
const kept = new Map();
const KEPT_MAX = 32;

// ``maxAge``: an answer up to that many seconds old will do (``Cache-Control: max-age``): the
// server may give the one it built for another page a moment ago instead of building it again.
export async function get(url, {maxAge} = {}) {
  const ctl = new AbortController(), timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const headers = authHeaders(), known = kept.get(url);
  if (known) headers["If-None-Match"] = known[0];
  if (maxAge) headers["Cache-Control"] = "max-age=" + maxAge;
  try {
    const r = await fetch(url, {signal: ctl.signal, cache: "no-store", headers});
    if (r.status === 304 && known) return known[1];
    if (r.status === 401) {
      askForToken("The scheduler asks for a token.");
      throw new HttpError("a token is needed: give yours in the token box", 401);
    }
    if (!r.ok) throw new HttpError("scheduler error: HTTP " + r.status + " from " + url, r.status);
    const answer = await r.json(), etag = r.headers.get("ETag");
    kept.delete(url);  // re-inserted last: the Map's order is then oldest read first
    if (etag) kept.set(url, [etag, answer]);
    // each search typed is a URL of its own: keep the recent few, not one per keystroke
    while (kept.size > KEPT_MAX) kept.delete(kept.keys().next().value);
    return answer;
  } finally { clearTimeout(timer); }
}

// An element with attributes and children; strings become text nodes, never markup.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== "") e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// A table's head and rows, replaced whole: heads are words; a row is {cls, cells}.
export function fill(table, heads, rows) {
  const head = el("tr", {}, heads.map(h => el("th", {class: h.cls}, h.text ?? h)));
  const body = rows.map(r => el("tr", {class: r.cls},
    r.cells.map(c => c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))));
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, body));
}

export const appLink = id => el("a", {href: "/app/" + encodeURIComponent(id)}, id);

// "45 s", "3 min", "2 h 5 min", "3 d 4 h": a span of seconds as people say it.
export function span(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min";
  const h = Math.floor(m / 60);
  if (h < 24) return h + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
  const d = Math.floor(h / 24);
  return d + " d" + (h % 24 ? " " + (h % 24) + " h" : "");
}

export const since = iso => (Date.now() - Date.parse(iso)) / 1000;

// "23:04" today, "Nov 28 23:04" another day.
export function clock(iso) {
  const t = new Date(iso), now = new Date();
  const hm = t.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", hour12: false});
  return t.toDateString() === now.toDateString() ? hm
    : t.toLocaleDateString([], {month: "short", day: "numeric"}) + " " + hm;
}

// A time shown as ``text``, the absolute time on hover.
export const time = (iso, text) => el("time", {datetime: iso,
  title: new Date(iso).toLocaleString()}, text);

// "≈ 23:04, in 10 min" (or "≈ now" once the estimate is past).
export function startsAt(iso) {
  if (!iso) return "";
  const left = -since(iso);
  return time(iso, left < 30 ? "≈ now" : "≈ " + clock(iso) + ", in " + span(left));
}

// A reason: its code as a badge, the sentence as its title, shown below it once clicked.
// ``open``: the keys of the badges opened, kept across the page's redraws.
export function badge(code, sentence, key, open) {
  if (!sentence && !code) return "";
  const b = el("button", {type: "button", class: "badge", title: sentence || code,
    "aria-expanded": open.has(key) ? "true" : "false"}, code || "waiting");
  b.addEventListener("click", () => {
    const now = b.getAttribute("aria-expanded") !== "true";
    if (now) open.add(key); else open.delete(key);
    b.setAttribute("aria-expanded", String(now));
  });
  return el("span", {class: "reason"}, b, el("div", {class: "sentence"}, sentence));
}

// "8" or, while it reserves, "8: 4/9 cores reserved, 14 min left".
export function gangText(g) {
  if (!g) return "";
  const r = g.reservation;
  if (!r) return String(g.executors);
  const held = g.executors + ": " + r.held_cores + "/" + r.needed_cores + " cores reserved";
  return r.deadline ? held + ", " + span(-since(r.deadline)) + " left" : held;
}

export const mib = n => n >= 1024 ? (n / 1024).toFixed(n % 1024 ? 1 : 0) + " GiB" : n + " MiB";

// Runs ``refresh`` now and ``ms`` after each run ends (runs never overlap); not while the tab
// is hidden (nobody looks: the server is spared), at once when it shows again. The health
// line says what went wrong, and the body is marked stale while the figures shown are old.
export function poll(refresh, ms) {
  const health = document.getElementById("health");
  let timer = null, running = false, again = false;
  async function run() {
    clearTimeout(timer);
    if (running) {  // asked while reading: read again once this read is done
      again = true;
      return;
    }
    running = true;
    again = false;
    try {
      await refresh(health);
      document.body.classList.remove("stale");
    } catch (e) {
      health.textContent = e instanceof HttpError ? e.message : "scheduler unreachable";
      document.body.classList.add("stale");
    } finally {
      running = false;
      if (!document.hidden) timer = setTimeout(run, again ? 0 : ms);
    }
  }
  document.addEventListener("visibilitychange", () => { if (!document.hidden) run(); });
  run();
  return run;  // to read again at once (after an action)
}

export function healthLine(h) {
  // Behind several clusters, whether each answers ("a ok, b unreachable").
  const each = (h.clusters || []).map(c => c.name + (c.reachable ? " ok" : " unreachable"));
  return h.cluster + (each.length ? " | clusters: " + each.join(", ") : "") +
    (h.plan ? " | " + h.plan : "") + (h.next_plan ? " | next: " + h.next_plan : "");
}
