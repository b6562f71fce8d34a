// Running jobs with their lease countdowns; the list is fetched again every few seconds.

import { fill, h } from "./dom.js";
import { kindInput, labelled, rememberInHash } from "./filters.js";
import { COLUMNS, JobTable, timeCell } from "./jobtable.js";
import { Countdowns } from "./lease.js";

const REFRESH_MS = 3000;

export function mount(root, ctx, params) {
  const countdowns = new Countdowns();
  const kind = kindInput(params.get("kind"), "running-kind");
  const table = new JobTable({
    caption: "Running jobs",
    empty: "No job is running.",
    pageSize: 100,
    columns: [
      COLUMNS.id,
      COLUMNS.kind,
      { label: "Worker", cell: (j) => j.lease_owner ?? "—" },
      { label: "Token", class: "num", cell: (j) => String(j.lease_token) },
      { label: "Leased at", class: "hide-narrow", cell: (j) => timeCell(j.leased_at) },
      { label: "Lease", cell: (j) => countdowns.make(j.leased_at, j.lease_expires_at) },
      COLUMNS.attempts,
    ],
  });

  async function apply() {
    const filter = { status: "running", kind: kind.input.value.trim() };
    rememberInHash("running", { kind: filter.kind });
    try {
      await table.load(filter);
    } catch (error) {
      ctx.fail(error);
    }
  }

  kind.input.addEventListener("change", apply);
  fill(
    root,
    h("h1", {}, "Running"),
    h(
      "form",
      { class: "toolbar", role: "search", "aria-label": "Filter running jobs", onsubmit: (e) => (e.preventDefault(), apply()) },
      labelled("Kind", kind.input, kind.list),
      h("button", { type: "submit" }, "Apply"),
    ),
    h("p", { class: "note" }, "A lease that runs out is returned to the queue by the reaper (or the job goes dead on its last attempt)."),
    h("section", { class: "panel" }, table.el),
  );
  apply();
  const timer = setInterval(() => {
    if (!document.hidden) table.refresh().catch(() => {}); // the stats poll reports outages
  }, REFRESH_MS);
  return {
    onStats(stats) {
      kind.setKinds(Object.keys(stats.by_kind));
    },
    unmount() {
      clearInterval(timer);
      countdowns.stop();
    },
  };
}
