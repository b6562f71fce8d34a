// Actions on the jobs ticked in a list: cancel, delete, requeue, run now; each behind a
// confirmation, each job its own request, and a count of what was done and refused.

import { del, post } from "./api.js";
import { h } from "./dom.js";
import { confirm } from "./actions.js";
import { count } from "./format.js";

const ACTIONS = {
  cancel: {
    label: "Cancel",
    verb: "cancelled",
    body: "Queued and dead jobs are cancelled at once; running ones when their worker next reports.",
    send: (id) => post(`jobs/${id}/cancel`),
  },
  delete: {
    label: "Delete",
    verb: "deleted",
    body: "The jobs and their attempt history are deleted for good. Running jobs are refused: cancel them first.",
    send: (id) => del(`jobs/${id}`),
  },
  requeue: {
    label: "Requeue",
    verb: "requeued",
    body: "Dead and cancelled jobs go back to the queue with their attempts reset to 0; others are refused.",
    send: (id) => post(`jobs/${id}/requeue`),
  },
  "run-now": {
    label: "Run now",
    verb: "made due now",
    body: "Queued jobs waiting for their run-after time (a retry's backoff, a later start) become due at once; others are refused.",
    send: (id) => post(`jobs/${id}/run-now`),
  },
};

/** A toolbar acting on table.selection(); after an action the table is loaded again. */
export function bulkBar(table, ctx) {
  const label = h("span", { class: "muted", "aria-live": "polite" }, "");
  const buttons = Object.entries(ACTIONS).map(([name, action]) =>
    h(
      "button",
      {
        type: "button",
        class: name === "delete" ? "danger" : "",
        dataset: { bulk: name },
        disabled: true,
        onclick: () => run(name),
      },
      action.label,
    ),
  );
  const el = h("div", { class: "toolbar bulk", role: "group", "aria-label": "Act on the selected jobs" }, label, buttons);

  function update(selection) {
    label.textContent = selection.length ? `${count(selection.length)} selected` : "Tick jobs to act on them";
    for (const button of buttons) button.disabled = !selection.length;
  }

  async function run(name) {
    const action = ACTIONS[name];
    const jobs = table.selection();
    if (!jobs.length) return;
    const ids = jobs.map((j) => `#${j.id}`).join(", ");
    const ok = await confirm({
      title: `${action.label} ${count(jobs.length)} job${jobs.length === 1 ? "" : "s"}?`,
      body: `${action.body} Jobs: ${ids}.`,
      action: action.label,
    });
    if (!ok) return;
    let done = 0;
    let refused = 0;
    for (const job of jobs) {
      try {
        await action.send(Number(job.id));
        done += 1;
      } catch (error) {
        if (error.status === 409 || error.status === 404) refused += 1;
        else {
          ctx.fail(error);
          break;
        }
      }
    }
    ctx.notify(`${count(done)} ${action.verb}${refused ? `, ${count(refused)} refused (their state forbids it)` : ""}.`, refused && !done ? "error" : "ok");
    ctx.refreshStats();
    await table.refresh().catch(ctx.fail);
  }

  update([]);
  return { el, update };
}
