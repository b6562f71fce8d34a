// Dead jobs, and requeueing them: one at a time or all that match a filter.

import { requeueMany, requeueOne } from "./actions.js";
import { fill, h } from "./dom.js";
import { kindInput, labelled, rememberInHash } from "./filters.js";
import { COLUMNS, JobTable } from "./jobtable.js";

export function mount(root, ctx, params) {
  const kind = kindInput(params.get("kind"), "dead-kind");
  const errorContains = h("input", { name: "error_contains", maxlength: 1000, placeholder: "any error", spellcheck: "false" });
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

  async function apply() {
    rememberInHash("dead", { kind: kind.input.value.trim() });
    try {
      await table.load({ status: "dead", kind: kind.input.value.trim() });
    } catch (error) {
      ctx.fail(error);
    }
  }

  async function requeueAll() {
    const stats = ctx.history.latest;
    const k = kind.input.value.trim();
    const filter = { kind: k, error_contains: errorContains.value.trim() };
    // With an error filter we cannot know the count in advance; the answer says it.
    let expected = null;
    if (stats && !filter.error_contains) {
      expected = k ? (stats.by_kind[k]?.dead ?? 0) : stats.by_status.dead;
    }
    if ((await requeueMany(filter, expected, ctx)) !== null) await table.load(table.filter).catch(ctx.fail);
  }

  kind.input.addEventListener("change", apply);
  fill(
    root,
    h("h1", {}, "Dead jobs"),
    h("p", { class: "note read-only-note" }, "Requeueing needs an admin API token; this view is read-only."),
    h(
      "form",
      { class: "toolbar", role: "search", "aria-label": "Filter dead jobs", onsubmit: (e) => (e.preventDefault(), apply()) },
      labelled("Kind", kind.input, kind.list),
      h("label", { class: "admin-only" }, "Error contains (bulk requeue only)", errorContains),
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
