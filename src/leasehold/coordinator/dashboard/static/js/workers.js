// Workers: the live ones (a heartbeat in the last 15 s), those gone within the hour, and
// the queued work that no live worker serves.

import { get } from "./api.js";
import { fill, h } from "./dom.js";
import { count, duration } from "./format.js";
import { timeCell } from "./jobtable.js";
import { unservedWarnings } from "./overview.js";

const REFRESH_MS = 3000;

function names(list) {
  return list === null || list === undefined ? "any" : list.join(", ");
}

function row(worker) {
  return h(
    "tr",
    { dataset: { worker: worker.worker_id } },
    h("th", { scope: "row", class: "mono" }, worker.worker_id),
    h("td", {}, h("span", { class: `badge ${worker.live ? "running" : "dead"}` }, worker.live ? "live" : "gone")),
    h("td", {}, worker.host),
    h("td", { class: "num" }, String(worker.pid)),
    h("td", { class: "num" }, count(worker.concurrency)),
    h("td", {}, names(worker.kinds)),
    h("td", {}, names(worker.queues)),
    h("td", { class: "num" }, `${duration(worker.seconds_since_seen)} ago`),
    h("td", { class: "hide-narrow" }, timeCell(worker.started_at)),
    h("td", { class: "hide-narrow" }, worker.version),
  );
}

export function mount(root, ctx) {
  const warnings = h("div", { class: "unserved" });
  const body = h("div", { class: "table-wrap" });
  fill(
    root,
    h("h1", {}, "Workers"),
    warnings,
    h("p", { class: "note" }, "Workers send a heartbeat every 5 s; one not heard from for 15 s is listed as gone, and forgotten after an hour."),
    h("section", { class: "panel" }, body),
  );

  async function load() {
    let answer;
    try {
      answer = await get("workers");
    } catch (error) {
      ctx.fail(error);
      return;
    }
    if (!answer.workers.length) {
      fill(body, h("p", { class: "empty-state" }, "No worker has sent a heartbeat in the last hour."));
      return;
    }
    const head = h(
      "tr",
      {},
      ["Worker", "State", "Host", "PID", "Slots", "Kinds", "Queues", "Last seen"].map((t) =>
        h("th", { scope: "col", class: ["PID", "Slots", "Last seen"].includes(t) ? "num" : "" }, t),
      ),
      h("th", { scope: "col", class: "hide-narrow" }, "Started"),
      h("th", { scope: "col", class: "hide-narrow" }, "Version"),
    );
    fill(body, h("table", {}, h("caption", { class: "visually-hidden" }, "Workers"), h("thead", {}, head), h("tbody", {}, answer.workers.map(row))));
  }

  load();
  const timer = setInterval(() => {
    if (!document.hidden) load();
  }, REFRESH_MS);
  return {
    onStats(stats) {
      fill(warnings, unservedWarnings(stats));
    },
    unmount() {
      clearInterval(timer);
    },
  };
}
