// Queues: counts by status, the oldest waiting job, throughput, and pause / resume.

import { get, post } from "./api.js";
import { confirm } from "./actions.js";
import { fill, h } from "./dom.js";
import { count, duration } from "./format.js";

const REFRESH_MS = 3000;
const STATUSES = ["waiting", "queued", "running", "completed", "dead", "cancelled"];

function row(queue, act) {
  const state = queue.paused
    ? h("span", { class: "badge paused" }, "paused")
    : h("span", { class: "badge running" }, "active");
  const button = queue.paused
    ? h("button", { type: "button", dataset: { resume: queue.name }, onclick: () => act(queue, "resume") }, "Resume")
    : h("button", { type: "button", class: "danger", dataset: { pause: queue.name }, onclick: () => act(queue, "pause") }, "Pause");
  return h(
    "tr",
    { dataset: { queue: queue.name } },
    h("th", { scope: "row" }, h("a", { href: `#/jobs?queue=${encodeURIComponent(queue.name)}` }, queue.name)),
    h("td", {}, state),
    STATUSES.map((s) => h("td", { class: "num" }, count(queue.counts[s] ?? 0))),
    h("td", { class: "num" }, duration(queue.oldest_queued_age_seconds)),
    h("td", { class: "num" }, count(queue.completed_last_minute)),
    h("td", {}, button),
  );
}

export function mount(root, ctx) {
  const body = h("div", { class: "table-wrap" });
  fill(
    root,
    h("h1", {}, "Queues"),
    h("p", { class: "note" }, "A paused queue is not leased from until it is resumed; its running jobs finish. The pause is stored, so it holds across restarts and coordinators."),
    h("section", { class: "panel" }, body),
  );

  async function act(queue, what) {
    if (what === "pause") {
      const ok = await confirm({
        title: `Pause queue “${queue.name}”?`,
        body: `No job is leased from “${queue.name}” until it is resumed (${count(queue.counts.queued ?? 0)} queued now). Running jobs finish.`,
        action: "Pause",
      });
      if (!ok) return;
    }
    try {
      await post(`queues/${encodeURIComponent(queue.name)}/${what}`);
      ctx.notify(`Queue “${queue.name}” is ${what === "pause" ? "paused" : "resumed"}.`);
    } catch (error) {
      ctx.fail(error);
    }
    await load();
  }

  async function load() {
    let answer;
    try {
      answer = await get("queues");
    } catch (error) {
      ctx.fail(error);
      return;
    }
    if (!answer.queues.length) {
      fill(body, h("p", { class: "empty-state" }, "No queues yet: a queue appears with its first job."));
      return;
    }
    const head = h(
      "tr",
      {},
      h("th", { scope: "col" }, "Queue"),
      h("th", { scope: "col" }, "State"),
      STATUSES.map((s) => h("th", { scope: "col", class: "num" }, s[0].toUpperCase() + s.slice(1))),
      h("th", { scope: "col", class: "num" }, "Oldest waiting"),
      h("th", { scope: "col", class: "num" }, "Done last min"),
      h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Action")),
    );
    fill(
      body,
      h("table", {}, h("caption", { class: "visually-hidden" }, "Queues"), h("thead", {}, head), h("tbody", {}, answer.queues.map((q) => row(q, act)))),
    );
  }

  load();
  const timer = setInterval(() => {
    if (!document.hidden) load();
  }, REFRESH_MS);
  return {
    unmount() {
      clearInterval(timer);
    },
  };
}
