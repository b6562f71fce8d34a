// Successive GET /stats answers, and the time series the charts draw from them.
// Throughput is not in /stats as a rate: it is the change of the running totals between two
// answers divided by the time between them, so it is exact whatever the polling interval.
//
// The last five minutes are kept in the browser's storage, so that a reload or another tab
// draws the charts at once instead of starting empty. Only the figures the charts use are
// kept: counts and durations, no kind, queue, payload or token.

import { shortDuration } from "./format.js";

const KEEP_MS = 5 * 60 * 1000;
const MIN_WINDOW_MS = 60 * 1000;
// Answers closer together than this (an extra poll after a requeue) replace the previous one:
// a rate over a few milliseconds would be noise.
const MIN_STEP_MS = 500;
// A longer silence (a hidden tab, a network outage) is drawn as a gap, not as a straight line.
const GAP_MS = 15 * 1000;

const STORE_KEY = "leasehold.stats-history";
const EVENTS = ["enqueued", "completed", "failed", "lease_expired", "stale_token"];

function now() {
  return performance.timeOrigin + performance.now(); // monotonic, unlike Date.now()
}

/** The figures of a /stats answer that the charts and their legends read. */
function figures(stats) {
  return {
    by_status: {
      waiting: stats.by_status.waiting ?? 0,
      queued: stats.by_status.queued,
      running: stats.by_status.running,
      dead: stats.by_status.dead,
    },
    totals: Object.fromEntries(EVENTS.map((e) => [e, stats.totals?.[e] ?? 0])),
    avg_wait_seconds: stats.avg_wait_seconds,
    oldest_queued_age_seconds: stats.oldest_queued_age_seconds,
    lease_expirations: stats.lease_expirations,
    stale_token_rejections: stats.stale_token_rejections,
  };
}

function stored() {
  try {
    const samples = JSON.parse(localStorage.getItem(STORE_KEY) ?? "[]");
    const since = now() - KEEP_MS;
    const fine = (s) => Number.isFinite(s?.t) && s.t >= since && s.t <= now() && s.stats?.totals && s.stats?.by_status;
    return Array.isArray(samples) ? samples.filter(fine) : [];
  } catch {
    return []; // storage refused (a private window) or unreadable: start empty
  }
}

export class StatsHistory {
  constructor() {
    this.samples = stored();
    this.full = null; // the last answer itself, for the views (samples keep its figures only)
  }

  push(stats, t = now()) {
    if (this.samples.length && t - this.samples.at(-1).t < MIN_STEP_MS) this.samples.pop();
    this.samples.push({ t, stats: figures(stats) });
    while (this.samples.length > 2 && this.samples[1].t < t - KEEP_MS) this.samples.shift();
    this.full = stats;
    this.save();
  }

  /** Keep the samples for the next page (a few dozen kilobytes at most). */
  save() {
    try {
      localStorage.setItem(STORE_KEY, JSON.stringify(this.samples));
    } catch {
      // Storage full or refused: the charts still draw from what this page has seen.
    }
  }

  /** The last /stats answer this page got, or null before the first. */
  get latest() {
    return this.full;
  }

  get end() {
    return this.samples.at(-1)?.t ?? now();
  }

  /** The span the charts show: what we have, at least a minute, at most five. */
  get windowMs() {
    if (this.samples.length < 2) return MIN_WINDOW_MS;
    return Math.min(KEEP_MS, Math.max(MIN_WINDOW_MS, this.end - this.samples[0].t));
  }

  /** Per-second change of totals[event] between successive samples. */
  rate(event) {
    const points = [];
    for (let i = 1; i < this.samples.length; i++) {
      const a = this.samples[i - 1];
      const b = this.samples[i];
      const dt = (b.t - a.t) / 1000;
      if (b.t - a.t > GAP_MS || dt <= 0) {
        points.push({ t: b.t, v: null });
        continue;
      }
      // A total that went down means another database (or a restore): no rate for that step.
      const delta = (b.stats.totals?.[event] ?? 0) - (a.stats.totals?.[event] ?? 0);
      points.push({ t: b.t, v: delta >= 0 ? delta / dt : null });
    }
    return points;
  }

  /**
   * At each sample, how many totals[event] happened in the trailing windowMs (or since the
   * first sample, while there is less history): steadier than a rate for rare events such as
   * lease expirations, where one event in one poll would draw a spike.
   */
  trailingCount(event, windowMs) {
    const points = [];
    let j = 0;
    for (let i = 1; i < this.samples.length; i++) {
      const b = this.samples[i];
      while (this.samples[j].t < b.t - windowMs) j++;
      const a = this.samples[Math.min(j, i - 1)];
      const delta = (b.stats.totals?.[event] ?? 0) - (a.stats.totals?.[event] ?? 0);
      points.push({ t: b.t, v: delta >= 0 ? delta : null });
    }
    return points;
  }

  /** "in the last 5 min", or over the shorter history there is ("in the last 40 s"). */
  get spanText() {
    const span = this.samples.length > 1 ? this.end - this.samples[0].t : 0;
    if (span >= KEEP_MS - 5000) return "in the last 5 min";
    return `in the last ${shortDuration(Math.max(span, MIN_STEP_MS) / 1000)}`;
  }

  /** A figure of each sample, pick(stats) -> number or null. */
  gauge(pick) {
    return this.samples.map(({ t, stats }) => ({ t, v: pick(stats) }));
  }

  /** How much a figure grew over the samples kept (since the page opened, at most 5 min). */
  growth(pick) {
    if (this.samples.length < 2) return 0;
    return Math.max(0, pick(this.latest) - pick(this.samples[0].stats));
  }
}
