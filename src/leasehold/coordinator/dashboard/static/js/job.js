// One job: its fields, why it is not running, its parents and dependents, payload,
// result, last error and attempt history.

import { requeueOne } from "./actions.js";
import { ApiError, get } from "./api.js";
import { fill, h } from "./dom.js";
import { duration, json, secondsBetween } from "./format.js";
import { Workflow, explainLine, explainable, workflowFields } from "./graph.js";
import { errorCell, statusBadge, timeCell } from "./jobtable.js";
import { Countdowns } from "./lease.js";
import { errorLine, errorView } from "./traceback.js";

// While a job can still change, look again this often.
const REFRESH_MS = 3000;

function field(label, value) {
  return [h("dt", {}, label), h("dd", {}, value ?? "—")];
}

function block(title, text, cls = "json") {
  // tabindex: a long block scrolls, and keyboard users must be able to scroll it too.
  return h("section", { class: "panel" }, h("h2", {}, title), h("pre", { class: cls, tabindex: "0" }, text));
}

function fields(job, countdowns) {
  return h(
    "dl",
    { class: "fields" },
    field("Status", statusBadge(job.status)),
    field("Kind", job.kind),
    field("Attempts", `${job.attempts} of ${job.max_attempts}`),
    field("Fencing token", String(job.lease_token)),
    field("Lease owner", job.lease_owner),
    field(
      "Lease expires",
      job.status === "running" && job.lease_expires_at
        ? countdowns.make(job.leased_at, job.lease_expires_at)
        : timeCell(job.lease_expires_at),
    ),
    field("Leased at", timeCell(job.leased_at)),
    field("Run after", timeCell(job.run_after)),
    field("Created", timeCell(job.created_at)),
    field("Finished", timeCell(job.finished_at)),
    field("Idempotency key", job.idempotency_key),
    workflowFields(job, field),
  );
}

function attemptTable(attempts) {
  if (!attempts.length) return h("p", { class: "empty-state" }, "Never leased yet.");
  const head = h(
    "tr",
    {},
    ["Token", "Worker", "Leased at", "Finished at", "Took", "Outcome", "Error"].map((label) =>
      h("th", { scope: "col", class: label === "Token" || label === "Took" ? "num" : undefined }, label),
    ),
  );
  const rows = attempts.map((a) =>
    h(
      "tr",
      { dataset: { token: a.token } },
      h("td", { class: "num" }, String(a.token)),
      h("td", {}, a.worker_id),
      h("td", {}, timeCell(a.leased_at)),
      h("td", {}, timeCell(a.finished_at)),
      h("td", { class: "num" }, duration(secondsBetween(a.leased_at, a.finished_at))),
      h("td", {}, statusBadge(a.outcome)),
      h("td", {}, errorCell(errorLine(a.error))),
    ),
  );
  return h(
    "div",
    { class: "table-wrap" },
    h("table", { id: "attempts" }, h("caption", {}, "Attempts"), h("thead", {}, head), h("tbody", {}, rows)),
  );
}

export function mount(root, ctx, params, id) {
  const countdowns = new Countdowns();
  const workflow = new Workflow(id);
  let shown = "";
  let job = null;

  function render(answer, attempts, explained) {
    job = answer;
    countdowns.items = [];
    const requeue = h(
      "button",
      {
        type: "button",
        class: "danger admin-only",
        id: "requeue-job",
        onclick: async () => {
          if (await requeueOne(job, ctx)) await load(true);
        },
      },
      "Requeue",
    );
    fill(
      root,
      h(
        "div",
        { class: "detail-head" },
        h("h1", {}, `Job #${job.id}`),
        statusBadge(job.status),
        h("span", { class: "muted" }, job.kind),
        h(
          "div",
          { class: "actions" },
          job.status === "dead" ? requeue : null,
          h("button", { type: "button", class: "quiet", onclick: () => load(true) }, "Refresh"),
          h("a", { href: "#/jobs", class: "button" }, "All jobs"),
        ),
      ),
      explainLine(explained),
      h(
        "div",
        { class: "grid detail" },
        h("section", { class: "panel", "aria-label": "Fields" }, fields(job, countdowns)),
        h(
          "div",
          { class: "values" },
          block("Payload", json(job.payload)),
          job.status === "completed" || job.result !== null ? block("Result", json(job.result)) : null,
          job.last_error !== null
            ? h("section", { class: "panel", id: "last-error" }, h("h2", {}, "Last error"), errorView(job.last_error))
            : null,
        ),
      ),
      workflow.el,
      h("section", { class: "panel" }, attemptTable(attempts)),
    );
    workflow.render(job).catch(ctx.fail);
  }

  async function load(force = false) {
    try {
      const [answer, history] = await Promise.all([get(`jobs/${id}`), get(`jobs/${id}/attempts`)]);
      const explained = explainable(answer) ? await get(`jobs/${id}/explain`) : null;
      // Re-render only on a change, so a reader's text selection is not wiped every few seconds.
      const key = JSON.stringify([answer, history.attempts, explained]);
      if (force || key !== shown) render(answer, history.attempts, explained);
      shown = key;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        fill(root, h("h1", {}, "Job not found"), h("p", {}, `No job has id ${id}. `, h("a", { href: "#/jobs" }, "All jobs")));
        return;
      }
      ctx.fail(error);
    }
  }

  fill(root, h("p", { class: "muted" }, "Loading…"));
  load();
  const timer = setInterval(() => {
    const changing = job && ["waiting", "queued", "running"].includes(job.status);
    if (changing && !document.hidden) load();
  }, REFRESH_MS);
  return {
    unmount() {
      clearInterval(timer);
      countdowns.stop();
    },
  };
}
