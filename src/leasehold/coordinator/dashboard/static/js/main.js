// The dashboard's entry point: the router, the /stats poll, and messages to the user.

import {
  access,
  describe,
  describeProblem,
  noteRefusal,
  onAccessChange,
  recheck,
  setUpTokenForm,
} from "./access.js";
import { ApiError, get } from "./api.js";
import * as dead from "./dead.js";
import { byId, fill, h } from "./dom.js";
import { count } from "./format.js";
import { StatsHistory } from "./history.js";
import * as job from "./job.js";
import * as jobs from "./jobs.js";
import * as limits from "./limits.js";
import * as overview from "./overview.js";
import * as queues from "./queues.js";
import * as running from "./running.js";
import * as workers from "./workers.js";

const POLL_MS = 2000;
const VIEWS = { overview, jobs, running, dead, queues, limits, workers };

const statsHistory = new StatsHistory();
let view = null;
let pollTimer = null;
let noticeTimer = null;

function showAlert(message) {
  const alert = byId("alert");
  if (alert.textContent !== message) alert.textContent = message;
  alert.hidden = !message;
}

/** A short message in the corner; kind "error" for a failed action. */
function notify(message, kind = "ok") {
  const notice = byId("notice");
  notice.textContent = message;
  notice.className = `toast ${kind === "error" ? "error" : ""}`;
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (notice.hidden = true), 6000);
}

/** An action or a view's load failed. Authorization and outages go to the banner. */
function fail(error) {
  noteRefusal(error);
  if (error?.isAuth || error?.status === 0) showAlert(describe(error));
  else notify(describe(error), "error");
}

const ctx = { history: statsHistory, notify, fail, refreshStats: () => poll() };

function setLive(ok) {
  const live = byId("live");
  const text = ok ? "live" : "offline";
  if (live.textContent === text) return; // a live region: speak only on a change
  live.className = `live ${ok ? "ok" : "stale"}`;
  live.textContent = text;
}

function showCounts(stats) {
  byId("count-running").textContent = stats.by_status.running ? count(stats.by_status.running) : "";
  byId("count-dead").textContent = stats.by_status.dead ? count(stats.by_status.dead) : "";
}

// One poll at a time: a second request (after a requeue, a new token) while one is in flight
// runs right after it, so there is never more than one timer chain.
let polling = false;
let pollAgain = false;

async function poll() {
  if (polling) {
    pollAgain = true;
    return;
  }
  polling = true;
  clearTimeout(pollTimer);
  // No point asking while the token is refused: wait for the user to enter another one.
  if (!document.hidden && !refused()) {
    try {
      const stats = await get("stats");
      statsHistory.push(stats);
      setLive(true);
      showAlert(describeProblem());
      showCounts(stats);
      if (access.mode === "unreachable") recheck();
      view?.onStats?.(stats);
    } catch (error) {
      setLive(false);
      noteRefusal(error);
      showAlert(describe(error));
    }
  }
  polling = false;
  pollTimer = setTimeout(poll, pollAgain ? 0 : POLL_MS);
  pollAgain = false;
}

/** "#/jobs/12" -> {name: "job", id: "12"}; "#/jobs?status=dead" -> {name: "jobs", params}. */
function parseRoute() {
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const params = new URLSearchParams(search);
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "jobs" && parts[1] && /^[0-9]{1,18}$/.test(parts[1])) {
    return { name: "job", id: parts[1], params, tab: "jobs" };
  }
  const name = VIEWS[parts[0]] ? parts[0] : "overview";
  return { name, params, tab: name };
}

function refused() {
  return access.mode === "unauthorized" || access.mode === "forbidden" || access.mode === "refused";
}

/** The token may not read: say so, and show nothing that an earlier token could see. */
function showRefusal() {
  setLive(false);
  const message =
    access.mode === "refused"
      ? describeProblem()
      : describe(new ApiError(access.mode === "unauthorized" ? 401 : 403, access.mode, ""));
  showAlert(message);
  fill(byId("main"), h("section", { class: "panel empty-state" }, h("h1", {}, "No access"), h("p", {}, message)));
}

function route() {
  view?.unmount?.();
  view = null;
  const { name, id, params, tab } = parseRoute();
  for (const link of document.querySelectorAll("[data-route]")) {
    if (link.dataset.route === tab) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${name === "job" ? `Job #${id}` : name[0].toUpperCase() + name.slice(1)} · leasehold`;
  if (refused()) return showRefusal();
  const main = byId("main");
  view = name === "job" ? job.mount(main, ctx, params, id) : VIEWS[name].mount(main, ctx, params);
  if (statsHistory.latest) view?.onStats?.(statsHistory.latest);
}

function onAccess() {
  if (!refused()) showAlert(describeProblem());
  route(); // views that were refused load now, and refused ones come down
  poll();
}

window.addEventListener("hashchange", () => {
  route();
  // Like a page load: keyboard and screen reader users continue at the new content.
  byId("main").focus({ preventScroll: true });
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) poll();
});
setUpTokenForm(() => poll());
await recheck();
onAccessChange(onAccess);
route();
poll();
