// The certification workload's kinds (PROTOCOL.md §11). A handler gets the job
// ({id, kind, payload, attempt, token}) and an AbortSignal that fires when the worker
// must stop (lease lost, job cancelled, forced shutdown); it returns the JSON result.

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

export const handlers = {
  "cert.echo": async (job) => ({ echo: job.payload }),
  "cert.sleep": async (job, signal) => {
    const ms = Number(job.payload?.ms ?? 0);
    await sleep(ms, signal);
    return { slept: ms };
  },
  "cert.flaky": async (job) => {
    if (job.attempt <= Number(job.payload?.fail_times ?? 0)) {
      throw new Error(`flaky on attempt ${job.attempt}`);
    }
    return { ok: true };
  },
};
