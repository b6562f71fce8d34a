// A page of GET /jobs as a table, with the API's cursor paging (next_cursor). The API only
// pages forwards, so the cursors of the pages seen are kept to go back.

import { get, query } from "./api.js";
import { fill, h } from "./dom.js";
import { localTime } from "./format.js";
import { errorLine } from "./traceback.js";

export function jobLink(job) {
  return h("a", { href: `#/jobs/${Number(job.id)}`, class: "mono" }, `#${job.id}`);
}

export function statusBadge(status) {
  return h("span", { class: `badge ${status}` }, status);
}

export function timeCell(iso) {
  return iso ? h("time", { datetime: iso, class: "nowrap" }, localTime(iso)) : "—";
}

/** The last line of an error (the exception and its message); the job page shows it all. */
export function errorSummary(job) {
  return job.error_summary || errorLine(job.last_error);
}

export function errorCell(text) {
  return text ? h("span", { class: "error-text", title: text }, text) : "";
}

/** Columns used by several views: {label, cell(job), class?}. */
export const COLUMNS = {
  id: { label: "Job", cell: jobLink },
  kind: { label: "Kind", cell: (j) => j.kind },
  status: { label: "Status", cell: (j) => statusBadge(j.status) },
  attempts: { label: "Attempts", class: "num", cell: (j) => `${j.attempts} / ${j.max_attempts}` },
  created: { label: "Created", class: "hide-narrow", cell: (j) => timeCell(j.created_at) },
  finished: { label: "Finished", class: "hide-narrow", cell: (j) => timeCell(j.finished_at) },
  error: { label: "Last error", cell: (j) => errorCell(errorSummary(j)) },
};

export class JobTable {
  /** columns: [{label, cell(job) -> Node|string, class?}]; onRows(jobs) after each render.
   * source(params) -> {jobs, next_cursor}: where pages come from (GET /jobs by default). */
  constructor({ caption, columns, empty, pageSize = 50, onRows, selectable = false, onSelect, source }) {
    this.source = source ?? ((params) => get(`jobs${query(params)}`));
    this.selectable = selectable;
    this.onSelect = onSelect;
    this.selected = new Map(); // job id -> job, on the page shown
    this.caption = caption;
    this.columns = columns;
    this.empty = empty;
    this.pageSize = pageSize;
    this.onRows = onRows;
    this.filter = {};
    this.cursors = [null]; // cursors[i] fetches page i
    this.page = 0;
    this.nextCursor = null;
    this.body = h("div", { class: "table-wrap" });
    this.position = h("span", { class: "muted", "aria-live": "polite" });
    this.prevButton = h("button", { type: "button", onclick: () => this.go(this.page - 1) }, "← Previous");
    this.nextButton = h("button", { type: "button", onclick: () => this.go(this.page + 1) }, "Next →");
    this.el = h(
      "div",
      {},
      this.body,
      h("div", { class: "pager" }, this.position, this.prevButton, this.nextButton),
    );
  }

  /** Start again at the first page with this filter ({status?, kind?, queue?, error_contains?,
   * order?}); resolves to the page's jobs. */
  async load(filter, pageSize = this.pageSize) {
    this.filter = filter;
    this.pageSize = pageSize;
    this.cursors = [null];
    this.page = 0;
    return this.refresh();
  }

  async go(page) {
    if (page < 0 || page >= this.cursors.length) return;
    this.page = page;
    await this.refresh();
  }

  /** Fetch the current page again. */
  async refresh() {
    // Newest first unless the filter says otherwise: the jobs just made are the ones looked for.
    const params = { order: "desc", ...this.filter, limit: this.pageSize, cursor: this.cursors[this.page] };
    const answer = await this.source(params);
    this.nextCursor = answer.next_cursor;
    this.cursors.length = this.page + 1;
    if (this.nextCursor) this.cursors.push(this.nextCursor);
    this.render(answer.jobs);
    return answer.jobs;
  }

  /** The jobs ticked on the page shown. */
  selection() {
    return [...this.selected.values()];
  }

  clearSelection() {
    this.selected.clear();
    for (const box of this.body.querySelectorAll("input.select")) box.checked = false;
    this.onSelect?.(this.selection());
  }

  checkbox(job, jobs) {
    const box = h("input", { type: "checkbox", class: "select", "aria-label": `Select job #${job.id}` });
    box.checked = this.selected.has(job.id);
    box.addEventListener("change", () => {
      if (box.checked) this.selected.set(job.id, job);
      else this.selected.delete(job.id);
      this.onSelect?.(this.selection());
    });
    return box;
  }

  selectAll(jobs) {
    const box = h("input", { type: "checkbox", class: "select-all", "aria-label": "Select every job on this page" });
    box.addEventListener("change", () => {
      for (const job of jobs) {
        if (box.checked) this.selected.set(job.id, job);
        else this.selected.delete(job.id);
      }
      for (const one of this.body.querySelectorAll("input.select")) one.checked = box.checked;
      this.onSelect?.(this.selection());
    });
    return box;
  }

  render(jobs) {
    this.selected.clear();
    this.onSelect?.([]);
    this.prevButton.disabled = this.page === 0;
    this.nextButton.disabled = !this.nextCursor;
    const first = this.page * this.pageSize + 1;
    this.position.textContent = jobs.length
      ? `Page ${this.page + 1} · jobs ${first}–${first + jobs.length - 1}, ${this.filter.order === "asc" ? "oldest" : "newest"} first`
      : "";
    if (!jobs.length) {
      fill(this.body, h("p", { class: "empty-state" }, this.page ? "No more jobs." : this.empty));
    } else {
      const pick = this.selectable;
      const head = h(
        "tr",
        {},
        pick ? h("th", { scope: "col", class: "pick" }, this.selectAll(jobs)) : null,
        this.columns.map((c) => h("th", { scope: "col", class: c.class }, c.label)),
      );
      const rows = jobs.map((job) =>
        h(
          "tr",
          { dataset: { jobId: job.id } },
          pick ? h("td", { class: "pick" }, this.checkbox(job, jobs)) : null,
          this.columns.map((c) => h("td", { class: c.class }, c.cell(job))),
        ),
      );
      fill(
        this.body,
        h("table", {}, h("caption", { class: "visually-hidden" }, this.caption), h("thead", {}, head), h("tbody", {}, rows)),
      );
    }
    this.onRows?.(jobs);
  }
}
