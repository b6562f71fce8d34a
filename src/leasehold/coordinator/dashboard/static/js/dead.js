// Dead jobs, and requeueing them: one at a time or all that match a filter.

import { requeueMany, requeueOne } from "./actions.js";
import { fill, h } from "./dom.js";
import { kindInput, labelled, rememberInHash } from "./filters.js";
import { COLUMNS, JobTable } from "./jobtable.js";

export function mount(root, ctx, params) {
  const kind = kindInput(params.get("kind"), "dead-kind");
  const errorContains = h("input", {
    name: "error_contains",
    value: params.get("error_contains") ?? "",
    maxlength: 1000,
    placeholder: "any error",
    spellcheck: "false",
  });
  const table = new JobTable({
    caption: "Dead jobs",
    empty: "No dead jobs. Nothing to requeue.",
    columns: [
      COLUMNS.id,
      COLUMNS.kind,
      COLUMNS.attempts,
      COLUMNS.finished,
      COLUMNS.error,
      {
        label: "Action",
        class: "admin-only",
        cell: (job) =>
          h("button", {
            type: "button",
            class: "danger requeue",
            "aria-label": `Requeue job ${job.id}`,
            onclick: async () => {
              if (await requeueOne(job, ctx)) await table.refresh().catch(ctx.fail);
            },
          }, "Requeue"),
      },
    ],
  });

  // The list shows what "Requeue all matching…" would take: the same kind and error filter.
  function current() {
    return { kind: kind.input.value.trim(), error_contains: errorContains.value.trim() };
  }

  let shown = 0; // rows on the page shown, the whole list when there is no next page
  async function apply() {
    const filter = current();
    rememberInHash("dead", filter);
    try {
      shown = (await table.load({ status: "dead", ...filter })).length;
    } catch (error) {
      ctx.fail(error);
    }
  }

  async function requeueAll() {
    await apply(); // what the box says now, even if it was typed without Apply
    const stats = ctx.history.latest;
    const filter = current();
    // One page holds every match: that is the count. Else, without an error filter, /stats
    // has it; with one, the answer says how many.
    let expected = table.nextCursor ? null : shown;
    if (expected === null && stats && !filter.error_contains) {
      expected = filter.kind ? (stats.by_kind[filter.kind]?.dead ?? 0) : stats.by_status.dead;
    }
    if ((await requeueMany(filter, expected, ctx)) !== null) await apply();
  }

  kind.input.addEventListener("change", apply);
  errorContains.addEventListener("change", apply);
  fill(
    root,
    h("h1", {}, "Dead jobs"),
    h("p", { class: "note read-only-note" }, "Requeueing needs an admin API token; this view is read-only."),
    h(
      "form",
      { class: "toolbar", role: "search", "aria-label": "Filter dead jobs", onsubmit: (e) => (e.preventDefault(), apply()) },
      labelled("Kind", kind.input, kind.list),
      labelled("Error contains", errorContains),
      h("button", { type: "submit" }, "Apply"),
      h("span", { class: "spacer" }),
      h("button", { type: "button", class: "danger admin-only", id: "requeue-all", onclick: requeueAll }, "Requeue all matching…"),
    ),
    h("section", { class: "panel" }, table.el),
  );
  apply();
  return {
    onStats(stats) {
      kind.setKinds(Object.keys(stats.by_kind));
    },
  };
}
