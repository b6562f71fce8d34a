// Successive GET /stats answers, and the time series the charts draw from them.
// Throughput is not in /stats as a rate: it is the change of the running totals between two
// answers divided by the time between them, so it is exact whatever the polling interval.

const KEEP_MS = 5 * 60 * 1000;
const MIN_WINDOW_MS = 60 * 1000;
// Answers closer together than this (an extra poll after a requeue) replace the previous one:
// a rate over a few milliseconds would be noise.
const MIN_STEP_MS = 500;
// A longer silence (a hidden tab, a network outage) is drawn as a gap, not as a straight line.
const GAP_MS = 15 * 1000;

function now() {
  return performance.timeOrigin + performance.now(); // monotonic, unlike Date.now()
}

export class StatsHistory {
  constructor() {
    this.samples = [];
  }

  push(stats, t = now()) {
    if (this.samples.length && t - this.samples.at(-1).t < MIN_STEP_MS) this.samples.pop();
    this.samples.push({ t, stats });
    while (this.samples.length > 2 && this.samples[1].t < t - KEEP_MS) this.samples.shift();
  }

  get latest() {
    return this.samples.at(-1)?.stats ?? null;
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

  /** "in the last 5 min", or "since page load" while there is less history. */
  get spanText() {
    const full = this.samples.length > 1 && this.end - this.samples[0].t >= KEEP_MS - 5000;
    return full ? "in the last 5 min" : "since page load";
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
