// The overview at "/": reads GET /api/v1/overview every two seconds, and at once when the apps
// table's choices change (what /api/v1/health, /api/v1/queues, /api/v1/apps and /api/v1/cluster
// answer, the apps only the first that the table's filter and search match, apps.js; one
// answer shared by every open page with the same choices: doors/native/overview_api.py); the
// usage, read from the store, every thirty seconds, and at once when its choices change; and
// draws the queues, the apps, the cluster and the usage.

import {get, healthLine, poll} from "./common.js";
import {appsQuery, renderApps, wireFilters} from "./apps.js";
import {renderCluster} from "./cluster.js";
import {renderQueues} from "./queues.js";
import {refreshUsage, wireUsage} from "./usage.js";

const POLL_MS = 2000, USAGE_MS = 30000;
let usageAt = -Infinity;

async function refresh(health) {
  let asked, o;
  do {  // the table's choices changed while it was read: read what they ask now
    asked = appsQuery();
    o = await get("/api/v1/overview?" + asked);
  } while (asked !== appsQuery());
  health.textContent = healthLine(o.health);
  renderQueues(document.getElementById("queues"), o.queues, o.cluster.cores, o.cluster);
  renderApps(document.getElementById("apps"), o,
    o.queues.filter(q => q.leaf).map(q => q.name));
  renderCluster(o.cluster);
  if (Date.now() - usageAt >= USAGE_MS) {
    await refreshUsage();
    usageAt = Date.now();
  }
}

wireUsage();
const now = poll(refresh, POLL_MS);
wireFilters(now);
