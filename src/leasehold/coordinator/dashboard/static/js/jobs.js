// All jobs, filtered by status, kind and queue, newest (or oldest) first, a page at a time.

import { bulkBar } from "./bulk.js";
import { fill, h } from "./dom.js";
import { kindInput, labelled, pageSizeSelect, rememberInHash, statusSelect } from "./filters.js";
import { COLUMNS, JobTable } from "./jobtable.js";

export function mount(root, ctx, params) {
  const status = statusSelect(params.get("status") ?? "");
  const kind = kindInput(params.get("kind"), "jobs-kind");
  const size = pageSizeSelect(Number(params.get("limit")) || 50);
  const queue = h("input", { name: "queue", value: params.get("queue") ?? "", placeholder: "any queue", maxlength: 100, spellcheck: "false" });
  const order = h(
    "select",
    { name: "order" },
    h("option", { value: "desc" }, "newest first"),
    h("option", { value: "asc", selected: params.get("order") === "asc" }, "oldest first"),
  );
  const table = new JobTable({
    caption: "Jobs",
    empty: "No job matches these filters.",
    columns: [COLUMNS.id, COLUMNS.kind, COLUMNS.status, COLUMNS.attempts, COLUMNS.created, COLUMNS.finished, COLUMNS.error],
    selectable: true,
    onSelect: (selection) => bulk?.update(selection),
  });
  const bulk = bulkBar(table, ctx);

  async function apply() {
    const filter = { status: status.value, kind: kind.input.value.trim(), queue: queue.value.trim(), order: order.value };
    rememberInHash("jobs", { ...filter, order: order.value === "desc" ? "" : order.value, limit: size.value === "50" ? "" : size.value });
    try {
      await table.load(filter, Number(size.value));
    } catch (error) {
      ctx.fail(error);
    }
  }

  const form = h(
    "form",
    { class: "toolbar", role: "search", "aria-label": "Filter jobs", onsubmit: (e) => (e.preventDefault(), apply()) },
    labelled("Status", status),
    labelled("Kind", kind.input, kind.list),
    labelled("Queue", queue),
    labelled("Order", order),
    labelled("Per page", size),
    h("button", { type: "submit" }, "Apply"),
    h("span", { class: "spacer" }),
    h("button", { type: "button", class: "quiet", onclick: () => table.refresh().catch(ctx.fail) }, "Refresh"),
  );
  status.addEventListener("change", apply);
  size.addEventListener("change", apply);
  order.addEventListener("change", apply);
  kind.input.addEventListener("change", apply);
  queue.addEventListener("change", apply);
  fill(root, h("h1", {}, "Jobs"), form, bulk.el, h("section", { class: "panel" }, table.el));
  apply();
  return {
    onStats(stats) {
      kind.setKinds(Object.keys(stats.by_kind));
    },
  };
}
