// The certification workload's kinds (PROTOCOL.md §11). A handler gets the job
// ({id, kind, payload, attempt, token, parents, spawn}) and an AbortSignal that fires when
// the worker must stop (lease lost, job cancelled, forced shutdown); it returns the JSON
// result. `parents` are the lease's parents ({id, kind, status, result, ...}, in id order);
// `spawn(children, then)` makes keyed children under the job's token.

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
  // Spawns payload.children keyed cert.echo children and a cert.join continuation that
  // depends on them. Its first attempt spawns the first child, then waits payload.pause_ms
  // (the certifier kills its worker meanwhile); a later one spawns every key again.
  "cert.spawn": async (job, signal) => {
    const n = Number(job.payload?.children ?? 0);
    const children = Array.from({ length: n },
      (_, i) => ({ key: `child-${i}`, kind: "cert.echo", payload: { child: i } }));
    if (job.attempt === 1) {
      await job.spawn(children.slice(0, 1));
      await sleep(Number(job.payload?.pause_ms ?? 0), signal);
    }
    await job.spawn(children, { key: "join", kind: "cert.join" });
    return { spawned: n };
  },
  "cert.join": async (job) => ({ joined: job.parents.map((parent) => parent.result) }),
};
