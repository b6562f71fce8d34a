// Requeueing dead jobs, always behind a confirmation.

import { post } from "./api.js";
import { byId } from "./dom.js";
import { count } from "./format.js";

/** Ask in a modal dialog; resolves true only if the user confirmed (Esc or Cancel: false). */
export function confirm({ title, body, action }) {
  const dialog = byId("confirm");
  byId("confirm-title").textContent = title;
  byId("confirm-body").textContent = body;
  byId("confirm-ok").textContent = action;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
    dialog.showModal();
  });
}

/** Requeue one dead job. Resolves true when it was requeued. */
export async function requeueOne(job, ctx) {
  const ok = await confirm({
    title: `Requeue job #${job.id}?`,
    body: `Job #${job.id} (${job.kind}) goes back to the queue with its attempts reset to 0. Its last fencing token is revoked.`,
    action: "Requeue",
  });
  if (!ok) return false;
  try {
    await post(`jobs/${Number(job.id)}/requeue`);
  } catch (error) {
    if (error.status === 409) {
      ctx.notify(`Job #${job.id} is no longer dead, so it was not requeued.`, "error");
    } else {
      ctx.fail(error);
    }
    return false;
  }
  ctx.notify(`Job #${job.id} is queued again.`);
  ctx.refreshStats();
  return true;
}

// POST /jobs/requeue takes at most this many jobs per call.
export const BULK_LIMIT = 10000;

/** Requeue dead jobs matching {kind?, error_contains?}; expected is how many we think match. */
export async function requeueMany(filter, expected, ctx) {
  const what = [
    filter.kind ? `of kind “${filter.kind}”` : "of every kind",
    filter.error_contains ? `whose last error contains “${filter.error_contains}”` : "",
  ].join(" ");
  const ok = await confirm({
    title: "Requeue dead jobs?",
    body: `All dead jobs ${what.trim()} go back to the queue with their attempts reset to 0 (${expected === null ? "" : `about ${count(expected)}, `}at most ${count(BULK_LIMIT)}, oldest first).`,
    action: "Requeue all",
  });
  if (!ok) return null;
  const body = { limit: BULK_LIMIT };
  if (filter.kind) body.kind = filter.kind;
  if (filter.error_contains) body.error_contains = filter.error_contains;
  try {
    const answer = await post("jobs/requeue", body);
    ctx.notify(`${count(answer.requeued)} dead job${answer.requeued === 1 ? " is" : "s are"} queued again.`);
    ctx.refreshStats();
    return answer.requeued;
  } catch (error) {
    ctx.fail(error);
    return null;
  }
}
