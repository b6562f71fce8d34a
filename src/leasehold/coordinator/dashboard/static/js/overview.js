// The live overview: jobs by status, throughput, latency, lease trouble, and kinds.

import { LineChart, proportionBar } from "./charts.js";
import { fill, h } from "./dom.js";
import { count, duration, rate, shortDuration } from "./format.js";

const STATUSES = ["waiting", "queued", "running", "completed", "dead", "cancelled"];
const TITLES = {
  waiting: "Waiting",
  queued: "Queued",
  running: "Running",
  completed: "Completed",
  dead: "Dead",
  cancelled: "Cancelled",
};

function card(status) {
  const value = h("div", { class: "count" }, "—");
  const sub = h("div", { class: "sub" }, " ");
  const el = h(
    "a",
    { class: "panel card", href: `#/jobs?status=${status}`, dataset: { status } },
    h("div", { class: "label" }, TITLES[status]),
    value,
    sub,
  );
  return { el, value, sub };
}

function figure(label) {
  const value = h("div", { class: "value" }, "—");
  const sub = h("div", { class: "sub muted" });
  const el = h("div", { class: "panel figure" }, h("div", { class: "label" }, label), value, sub);
  return { el, value, sub };
}

function subline(status, stats) {
  switch (status) {
    case "waiting":
      return "for the jobs they depend on";
    case "queued":
      return stats.oldest_queued_age_seconds === null
        ? "none waiting"
        : `oldest waits ${duration(stats.oldest_queued_age_seconds)}`;
    case "running":
      return `avg run ${duration(stats.avg_run_seconds)}`;
    case "completed":
      return `${count(stats.completed_last_minute)} in the last minute`;
    case "cancelled":
      return `${count(stats.totals.cancelled)} cancelled in all`;
    default:
      return `${count(stats.totals.dead)} died in all · ${count(stats.totals.requeued)} requeued`;
  }
}

/** One line per (queue, kind) whose queued jobs no live worker serves. */
export function unservedWarnings(stats) {
  return (stats.unserved ?? []).map((gap) =>
    h(
      "p",
      { class: "warning", role: "note" },
      `No live worker serves kind “${gap.kind}” in queue “${gap.queue}”: ${count(gap.queued)} job${gap.queued === 1 ? "" : "s"} waiting.`,
    ),
  );
}

function kindTable(stats) {
  const kinds = Object.keys(stats.by_kind);
  if (!kinds.length) return h("p", { class: "empty-state" }, "No jobs yet.");
  const head = h(
    "tr",
    {},
    h("th", { scope: "col" }, "Kind"),
    STATUSES.map((s) => h("th", { scope: "col", class: "num" }, TITLES[s])),
    h("th", { scope: "col", class: "num hide-narrow" }, "Failures"),
    h("th", { scope: "col", class: "num hide-narrow" }, "Lease expirations"),
  );
  const rows = kinds.map((kind) => {
    const totals = stats.totals_by_kind[kind] ?? {};
    return h(
      "tr",
      {},
      h("th", { scope: "row" }, h("a", { href: `#/jobs?kind=${encodeURIComponent(kind)}` }, kind)),
      STATUSES.map((s) => h("td", { class: "num" }, count(stats.by_kind[kind][s]))),
      h("td", { class: "num hide-narrow" }, count(totals.failed ?? 0)),
      h("td", { class: "num hide-narrow" }, count(totals.lease_expired ?? 0)),
    );
  });
  return h(
    "div",
    { class: "table-wrap" },
    h("table", {}, h("caption", {}, "By kind"), h("thead", {}, head), h("tbody", {}, rows)),
  );
}

export function mount(root, ctx) {
  const cards = Object.fromEntries(STATUSES.map((s) => [s, card(s)]));
  const figures = {
    wait: figure("Avg wait (5 min)"),
    run: figure("Avg run (5 min)"),
    failures: figure("Failures, all time"),
    expirations: figure("Lease expirations"),
    stale: figure("Stale-token rejections"),
    enqueued: figure("Enqueued, all time"),
  };
  const charts = {
    throughput: new LineChart(
      "Throughput (jobs/s)",
      [
        { key: "enqueued", name: "enqueued" },
        { key: "completed", name: "completed" },
        { key: "failed", name: "failed" },
      ],
      { format: rate, floor: 1 },
    ),
    latency: new LineChart(
      "Queue latency",
      [
        { key: "wait", name: "avg wait (5 min)" },
        { key: "oldest", name: "oldest waiting" },
      ],
      { format: duration, axisFormat: shortDuration, floor: 1 },
    ),
    backlog: new LineChart(
      "Jobs by status",
      [
        { key: "waiting", name: "waiting" },
        { key: "queued", name: "queued" },
        { key: "running", name: "running" },
        { key: "dead", name: "dead" },
      ],
      { format: count, floor: 4, integer: true },
    ),
    trouble: new LineChart(
      "Lease trouble (last minute)",
      [
        { key: "expired", name: "lease expirations" },
        { key: "stale", name: "stale tokens" },
      ],
      { format: count, floor: 4, integer: true },
    ),
  };
  const mix = h("div");
  const kinds = h("section", { class: "panel", "aria-label": "Jobs by kind" });
  const unserved = h("div", { class: "unserved", id: "unserved" });
  fill(
    root,
    h("h1", { class: "visually-hidden" }, "Overview"),
    unserved,
    h("div", { class: "grid cards" }, STATUSES.map((s) => cards[s].el)),
    mix,
    h("div", { class: "grid figures" }, Object.values(figures).map((f) => f.el)),
    h("div", { class: "grid charts" }, Object.values(charts).map((c) => c.el)),
    kinds,
  );

  function render() {
    const history = ctx.history;
    const stats = history.latest;
    if (!stats) return;
    for (const s of STATUSES) {
      cards[s].value.textContent = count(stats.by_status[s]);
      cards[s].sub.textContent = subline(s, stats);
    }
    fill(unserved, unservedWarnings(stats));
    fill(mix, proportionBar(STATUSES.map((s) => ({ key: s, value: stats.by_status[s], label: TITLES[s] }))));
    figures.wait.value.textContent = duration(stats.avg_wait_seconds);
    figures.run.value.textContent = duration(stats.avg_run_seconds);
    figures.failures.value.textContent = count(stats.totals.failed);
    figures.failures.sub.textContent = `${count(stats.failed_last_minute)} in the last minute`;
    figures.expirations.value.textContent = count(stats.lease_expirations);
    figures.expirations.sub.textContent = `+${count(history.growth((x) => x.lease_expirations))} ${history.spanText}`;
    figures.stale.value.textContent = count(stats.stale_token_rejections);
    figures.stale.sub.textContent = `+${count(history.growth((x) => x.stale_token_rejections))} ${history.spanText}`;
    figures.enqueued.value.textContent = count(stats.totals.enqueued);
    figures.enqueued.sub.textContent = `${count(stats.totals.leased)} leases`;
    const end = history.end;
    const span = history.windowMs;
    const MINUTE_MS = 60 * 1000;
    charts.throughput.update(
      { enqueued: history.rate("enqueued"), completed: history.rate("completed"), failed: history.rate("failed") },
      end,
      span,
    );
    charts.latency.update(
      {
        wait: history.gauge((x) => x.avg_wait_seconds),
        // Nothing waiting is an age of zero, not a gap in the line.
        oldest: history.gauge((x) => x.oldest_queued_age_seconds ?? 0),
      },
      end,
      span,
    );
    charts.backlog.update(
      {
        waiting: history.gauge((x) => x.by_status.waiting ?? 0),
        queued: history.gauge((x) => x.by_status.queued),
        running: history.gauge((x) => x.by_status.running),
        dead: history.gauge((x) => x.by_status.dead),
      },
      end,
      span,
    );
    charts.trouble.update(
      {
        expired: history.trailingCount("lease_expired", MINUTE_MS),
        stale: history.trailingCount("stale_token", MINUTE_MS),
      },
      end,
      span,
    );
    fill(kinds, kindTable(stats));
  }

  const onResize = () => render();
  window.addEventListener("resize", onResize);
  render();
  return {
    onStats: render,
    unmount() {
      window.removeEventListener("resize", onResize);
    },
  };
}
