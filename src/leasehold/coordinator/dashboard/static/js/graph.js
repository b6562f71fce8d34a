// A job's place in a workflow: its parents and its dependents with their status, each a
// table paged through GET /jobs/{id}/parents and /dependents (a job may have 10,000
// children: a page at a time), and the explain line that says why it is not running.

import { get, query } from "./api.js";
import { h } from "./dom.js";
import { count, localTime } from "./format.js";
import { COLUMNS, JobTable, statusBadge } from "./jobtable.js";

const PAGE = 25;

const EDGE_COLUMNS = [
  COLUMNS.id,
  { label: "Kind", cell: (e) => e.kind ?? h("span", { class: "muted" }, "deleted") },
  { label: "Status", cell: (e) => (e.status ? statusBadge(e.status) : "—") },
  {
    label: "If the parent fails",
    cell: (e) => (e.on_failure === "run" ? "runs anyway" : "cancelled"),
  },
  { label: "Spawn key", cell: (e) => (e.spawn_key ? h("span", { class: "mono" }, e.spawn_key) : "") },
];

/** One side of a job's edges ("parents" or "dependents"), kept across the page's refreshes
 * so that a reader paging through thousands stays on the page they are on. */
class EdgeSide {
  constructor(jobId, which) {
    this.which = which;
    this.heading = h("h2", {});
    this.table = new JobTable({
      caption: which,
      columns: EDGE_COLUMNS,
      empty: `No ${which}.`,
      pageSize: PAGE,
      source: (params) => get(`jobs/${jobId}/${which}${query({ cursor: params.cursor, limit: params.limit })}`),
    });
    this.table.filter = { order: "asc" }; // by id, as the API pages them
    this.el = h("section", { class: "panel edges", id: which }, this.heading, this.table.el);
    this.loaded = false;
  }

  /** Show the current page again (the first, the first time). */
  async show(total) {
    const title = this.which === "parents" ? "Parents" : "Dependents";
    this.heading.textContent = total === null ? title : `${title} (${count(total)})`;
    if (!this.loaded) {
      this.loaded = true;
      return this.table.load({ order: "asc" }, PAGE);
    }
    return this.table.refresh();
  }
}

/** The parents and dependents panels of a job page; render(job) places what applies. */
export class Workflow {
  constructor(jobId) {
    this.parents = new EdgeSide(jobId, "parents");
    this.dependents = new EdgeSide(jobId, "dependents");
    this.el = h("div", { class: "grid workflow" });
  }

  /** The panels for this state of the job; their pages are fetched again. */
  async render(job) {
    // depth > 0: it has parents (a chain above it); the count of dependents is kept.
    const sides = [];
    if (job.depth > 0) sides.push([this.parents, null]);
    if (job.dependents > 0) sides.push([this.dependents, job.dependents]);
    this.el.replaceChildren(...sides.map(([side]) => side.el));
    this.el.hidden = !sides.length;
    await Promise.all(sides.map(([side, total]) => side.show(total)));
  }
}

/** Fields that place the job in a workflow and under flow control, when they apply. */
export function workflowFields(job, field) {
  const link = (id) => h("a", { href: `#/jobs/${Number(id)}`, class: "mono" }, `#${id}`);
  const fields = [];
  if (job.waiting_for > 0) {
    fields.push(field("Waiting for", `${count(job.waiting_for)} parent${job.waiting_for === 1 ? "" : "s"} to complete`));
  }
  if (job.blocked_by !== null && job.blocked_by !== undefined) {
    fields.push(field("Blocked by", [link(job.blocked_by), " could not complete"]));
  }
  if (job.spawned_by !== null && job.spawned_by !== undefined) {
    const key = job.spawn_key ? [" · key ", h("span", { class: "mono" }, job.spawn_key)] : [];
    fields.push(field("Spawned by", [link(job.spawned_by), ...key]));
  }
  if (job.group_key) fields.push(field("Group key", h("span", { class: "mono" }, job.group_key)));
  if (job.weight !== undefined && job.weight !== 1) fields.push(field("Weight", count(job.weight)));
  if (job.start_by) fields.push(field("Start by", h("time", { datetime: job.start_by }, localTime(job.start_by))));
  if (job.unique_key) {
    fields.push(field("Unique key", h("span", { class: "mono" }, job.unique_key)));
  }
  return fields;
}

/** Statuses that explain has something to say about (others are plain from the badge). */
export function explainable(job) {
  return job.status === "waiting" || job.status === "queued";
}

/** One line: why the job is not running now, each reason with the time it ends if known. */
export function explainLine(answer) {
  if (!answer) return null;
  const reasons = answer.reasons.map((r) =>
    h("li", { dataset: { code: r.code } }, r.message, r.until ? ` (until ${localTime(r.until)})` : ""),
  );
  const lead = answer.runnable
    ? "Runnable: the next lease for its kind and queue may take it."
    : "Not running now, because:";
  return h(
    "section",
    { class: `panel explain ${answer.runnable ? "runnable" : ""}`, id: "explain", "aria-label": "Why it is not running" },
    h("strong", {}, lead),
    reasons.length ? h("ul", {}, reasons) : null,
  );
}
