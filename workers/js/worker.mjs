#!/usr/bin/env node
// A leasehold worker on Node's standard library alone: the reference for PROTOCOL.md §10.
// Usage: node worker.mjs [handlers-module]   (default ./handlers.mjs; it exports `handlers`)
// Environment: LEASEHOLD_URL, LEASEHOLD_TOKEN, LEASEHOLD_KINDS, LEASEHOLD_WORKER_ID,
// LEASEHOLD_LEASE_SECONDS, LEASEHOLD_CONCURRENCY, LEASEHOLD_WAIT_SECONDS,
// LEASEHOLD_GRACE_SECONDS.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const env = process.env;
const config = {
  url: (env.LEASEHOLD_URL ?? "http://127.0.0.1:8080").replace(/\/$/, ""),
  token: env.LEASEHOLD_TOKEN,
  workerId: env.LEASEHOLD_WORKER_ID ?? `${hostname()}-${process.pid}-js`,
  leaseSeconds: env.LEASEHOLD_LEASE_SECONDS ? Number(env.LEASEHOLD_LEASE_SECONDS) : undefined,
  concurrency: Number(env.LEASEHOLD_CONCURRENCY ?? 4),
  waitSeconds: Number(env.LEASEHOLD_WAIT_SECONDS ?? 2),
  graceSeconds: Number(env.LEASEHOLD_GRACE_SECONDS ?? 30),
};
const modulePath = resolve(process.argv[2] ?? new URL("./handlers.mjs", import.meta.url).pathname);
const { handlers } = await import(pathToFileURL(modulePath).href);
const kinds = env.LEASEHOLD_KINDS ? env.LEASEHOLD_KINDS.split(",").map((k) => k.trim()).filter(Boolean)
  : Object.keys(handlers);

const log = (event, fields = {}) =>
  console.log(JSON.stringify({ event, worker_id: config.workerId, ...fields }));

// -- HTTP ------------------------------------------------------------------------------
class Answer {
  constructor(status, body) { this.status = status; this.body = body; }
  get code() { return this.body?.error; }
}
class NoAnswer extends Error {} // network error, timeout or 5xx: may be retried (§8)

async function call(method, path, body, timeoutSeconds = 10) {
  const headers = { Accept: "application/json" };
  // Every change declares JSON, with a body or without one: the coordinator requires it.
  if (body !== undefined || method !== "GET") headers["Content-Type"] = "application/json";
  if (config.token) headers.Authorization = `Bearer ${config.token}`;
  let response;
  try {
    response = await fetch(config.url + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
    });
  } catch (error) {
    throw new NoAnswer(`${method} ${path}: ${error.message}`);
  }
  if (response.status >= 500) throw new NoAnswer(`${method} ${path}: ${response.status}`);
  let parsed = null;
  try { // a body cut short on the way is no answer at all
    const text = await response.text();
    parsed = text ? JSON.parse(text) : null;
  } catch (error) {
    throw new NoAnswer(`${method} ${path}: answer cut short: ${error.message}`);
  }
  if (response.status !== 204 && parsed === null) throw new NoAnswer(`${method} ${path}: no body`);
  return new Answer(response.status, parsed);
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const backoff = (n, base, cap) => { // PROTOCOL.md §8: min(cap, base * 2^(n-1)) * [0.5, 1]
  const step = Math.min(cap, base * 2 ** (n - 1));
  return (step / 2 + Math.random() * step / 2) * 1000;
};

// Retried on no answer until `deadline` (ms since epoch); a 4xx is an answer.
async function callUntil(deadline, method, path, body) {
  for (let n = 1; ; n++) {
    try {
      return await call(method, path, body);
    } catch (error) {
      if (!(error instanceof NoAnswer) || Date.now() + backoff(n, 0.1, 5) > deadline) throw error;
      await pause(backoff(n, 0.1, 5));
    }
  }
}

// -- one job -------------------------------------------------------------------------
const running = new Set();

class Held {
  constructor(lease, sentAt) {
    this.id = lease.job.id;
    this.token = lease.token;
    this.kind = lease.job.kind;
    // Reckoned on our own clock from when the lease was asked for: errs early (§10.2).
    this.seconds = lease.lease_seconds ?? config.leaseSeconds ?? 30;
    this.deadline = sentAt + this.seconds * 1000;
    this.controller = new AbortController();
    this.lost = null; // why the lease is gone: "stale_token", "job_cancelled", "expired"...
    this.timer = null;
  }
  lose(why) {
    if (this.lost) return;
    this.lost = why;
    this.controller.abort(new Error(`lease lost: ${why}`));
    log("lease.lost", { job_id: this.id, reason: why });
  }
}

function scheduleRenewal(held) {
  const every = (held.seconds * 1000) / 3;
  held.timer = setTimeout(async () => {
    if (held.lost) return;
    if (Date.now() >= held.deadline) return held.lose("expired");
    const sentAt = Date.now();
    try {
      const answer = await call("POST", `/jobs/${held.id}/renew`, { token: held.token });
      if (answer.status === 200) {
        held.deadline = sentAt + held.seconds * 1000;
      } else {
        await refused(held, answer);
        return;
      }
    } catch (error) {
      if (Date.now() >= held.deadline) return held.lose("expired");
    }
    if (!held.lost) scheduleRenewal(held);
  }, every);
}

// A 409 under this lease (renewal or spawn): the lease is gone; after job_cancelled the
// job is released, which ends it cancelled at once (§10.3).
async function refused(held, answer) {
  held.lose(answer.code ?? `http_${answer.status}`);
  if (answer.code === "job_cancelled") await report(held, "release", { token: held.token });
}

// Children of the running job, under its token (PROTOCOL.md §4 "Children"): each keyed by
// (this job, key), so a job leased again after a crash that spawns the same keys gets the
// children made the first time, none twice. `then`, if given, is one more job that depends
// on all of them (a continuation). Safe to repeat: retried until the lease's deadline.
async function spawn(held, children, then) {
  if (held.lost) throw new Error(`lease lost: ${held.lost}`);
  const jobs = [...children];
  if (then) {
    const after = children.map((child) => ({ ref: child.key }));
    jobs.push({ ...then, depends_on: [...(then.depends_on ?? []), ...after] });
  }
  const answer = await callUntil(held.deadline, "POST", `/jobs/${held.id}/children`,
    { token: held.token, jobs });
  if (answer.status === 200) return answer.body.jobs;
  if (answer.status === 409) await refused(held, answer);
  throw new Error(`spawn refused: ${answer.status} ${answer.code}: ${answer.body?.message}`);
}

async function report(held, verb, body) {
  try {
    return await callUntil(held.deadline, "POST", `/jobs/${held.id}/${verb}`, body);
  } catch (error) {
    log("report.unanswered", { job_id: held.id, verb, error: error.message });
    return null;
  }
}

async function runJob(lease, sentAt) {
  const held = new Held(lease, sentAt);
  running.add(held);
  const job = { ...lease.job, attempt: lease.job.attempts, token: lease.token,
    parents: lease.parents ?? [], // its parents' ids, statuses and results, in id order
    spawn: (children, then) => spawn(held, children, then) };
  const handler = handlers[held.kind];
  try {
    if (!handler) { // §10.4: never hold a job we cannot run
      await report(held, "fail", { token: held.token, error: `no handler for kind ${held.kind}` });
      return;
    }
    scheduleRenewal(held);
    let result, failure;
    try {
      result = await handler(job, held.controller.signal);
      if (result === undefined) result = null;
    } catch (error) {
      failure = error;
    }
    clearTimeout(held.timer);
    if (held.lost || Date.now() >= held.deadline) {
      if (!held.lost) held.lose("expired");
      if (held.lost === "forced") await report(held, "release", { token: held.token });
      return; // §10.3: a lost lease's result is dropped
    }
    if (failure) {
      await report(held, "fail", { token: held.token, error: String(failure?.message ?? failure) });
      return;
    }
    const answer = await report(held, "complete", { token: held.token, result });
    if (answer && (answer.status === 413 || answer.status === 422)) { // §10.5
      await report(held, "fail", { token: held.token, retryable: false,
        error: `the coordinator refused the result: ${answer.code}` });
    } else if (answer && answer.status !== 200) {
      log("report.refused", { job_id: held.id, code: answer.code });
    }
  } finally {
    clearTimeout(held.timer);
    running.delete(held);
    slotFreed();
  }
}

// -- the lease loop and stopping -----------------------------------------------------
let stopping = false;
let forced = false;
let signalNumber = 0;
let wakeLoop = () => {};
function slotFreed() { wakeLoop(); }

async function leaseLoop() {
  let requestId = null;
  for (let failures = 0; !stopping;) {
    const free = config.concurrency - running.size;
    if (free <= 0) { await new Promise((r) => { wakeLoop = r; }); continue; }
    requestId ??= `${config.workerId}-${randomUUID()}`; // same id when repeating (§5)
    const body = { worker_id: config.workerId, kinds, max_jobs: free,
      wait_seconds: config.waitSeconds, request_id: requestId };
    if (config.leaseSeconds) body.lease_seconds = config.leaseSeconds;
    const sentAt = Date.now();
    let answer;
    try {
      answer = await call("POST", "/lease", body, config.waitSeconds + 10);
    } catch (error) {
      failures += 1;
      log("coordinator.unreachable", { error: error.message });
      await pause(backoff(failures, 0.25, 10));
      continue;
    }
    failures = 0;
    requestId = null;
    if (answer.status === 204) continue;
    if (answer.status !== 200) { // 401, 403, 422: asking again will not help (§10.7)
      log("worker.fatal", { status: answer.status, code: answer.code });
      process.exitCode = 1;
      stopping = true;
      return;
    }
    for (const lease of answer.body.leases) {
      if (stopping) { // leased as we stopped: hand it back unstarted (§10.6)
        await call("POST", `/jobs/${lease.job.id}/release`, { token: lease.token }).catch(() => {});
      } else {
        runJob(lease, sentAt);
      }
    }
  }
}

function onSignal(sig) {
  signalNumber = sig === "SIGINT" ? 2 : 15;
  if (stopping) { // a second signal: stop the handlers, release their jobs
    forced = true;
    for (const held of running) held.lose("forced");
    return;
  }
  stopping = true;
  wakeLoop();
  log("worker.stopping", { signal: sig });
  setTimeout(() => onSignal(sig), config.graceSeconds * 1000).unref();
}
process.on("SIGTERM", () => onSignal("SIGTERM"));
process.on("SIGINT", () => onSignal("SIGINT"));

log("worker.started", { url: config.url, kinds, concurrency: config.concurrency });
await leaseLoop();
while (running.size > 0) await new Promise((r) => { wakeLoop = r; });
log("worker.stopped", { forced });
if (forced) process.exitCode = 128 + signalNumber;
