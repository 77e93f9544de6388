// The overview at "/": reads GET /api/v1/overview every two seconds (what /api/v1/health,
// /api/v1/queues, /api/v1/apps and /api/v1/cluster answer, in one answer shared by every open
// page: doors/native/overview_api.py; the usage,
// read from the store, every thirty, and at once when its choices change), and draws the
// queues, the apps, the cluster and the usage.

import {get, healthLine, poll} from "./common.js";
import {renderApps, wireFilters} from "./apps.js";
import {renderCluster} from "./cluster.js";
import {renderQueues} from "./queues.js";
import {refreshUsage, wireUsage} from "./usage.js";

const POLL_MS = 2000, USAGE_MS = 30000;
let usageAt = -Infinity;
let last = null;  // the last answers: filtering redraws the apps without asking again

function drawApps() {
  if (last) {
    renderApps(document.getElementById("apps"), last.apps,
      last.queues.filter(q => q.leaf).map(q => q.name));
  }
}

async function refresh(health) {
  const {health: h, queues, apps, cluster} = await get("/api/v1/overview");
  health.textContent = healthLine(h);
  last = {queues, apps};
  renderQueues(document.getElementById("queues"), queues, cluster.cores, cluster);
  drawApps();
  renderCluster(cluster);
  if (Date.now() - usageAt >= USAGE_MS) {
    await refreshUsage();
    usageAt = Date.now();
  }
}

wireFilters(drawApps);
wireUsage();
poll(refresh, POLL_MS);
