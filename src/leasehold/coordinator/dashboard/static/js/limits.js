// Limits: each kind's running cap, cap per group, rate of starts and turns between groups
// (GET /limits), and a form that sets them all at once (PUT /limits/{kind}).

import { confirm } from "./actions.js";
import { del, get, put } from "./api.js";
import { fill, h } from "./dom.js";
import { count, period } from "./format.js";

const REFRESH_MS = 3000;
const UNITS = { s: 1, m: 60, h: 3600, d: 86400 };

function rateText(rate) {
  if (!rate) return "—";
  return `${count(rate.limit)} per ${period(rate.period_seconds)}${rate.per_group ? " per group" : ""}`;
}

function row(limit, edit, remove) {
  return h(
    "tr",
    { dataset: { kind: limit.kind } },
    h("th", { scope: "row" }, h("a", { href: `#/jobs?kind=${encodeURIComponent(limit.kind)}` }, limit.kind)),
    h("td", { class: "num" }, count(limit.max_running)),
    h("td", { class: "num" }, count(limit.running)),
    h("td", { class: "num" }, count(limit.max_running_per_group)),
    h("td", { class: "rate" }, rateText(limit.rate)),
    h("td", {}, limit.fair ? "yes" : "no"),
    h(
      "td",
      { class: "admin-only nowrap" },
      h("button", { type: "button", class: "quiet", dataset: { edit: limit.kind }, onclick: () => edit(limit) }, "Edit"),
      " ",
      h("button", { type: "button", class: "danger", dataset: { remove: limit.kind }, onclick: () => remove(limit) }, "Remove"),
    ),
  );
}

/** The form's fields, named as the API's, and how to read and fill them. */
function limitForm(onSave) {
  const input = (name, props = {}) => h("input", { name, id: `limit-${name}`, ...props });
  const number = (name, max) => input(name, { type: "number", min: 1, max, step: 1, placeholder: "none" });
  const controls = {
    kind: input("kind", { required: true, maxlength: 200, spellcheck: "false", placeholder: "kind" }),
    max_running: number("max_running", 100000),
    max_running_per_group: number("max_running_per_group", 100000),
    rate_limit: number("rate_limit", 1000000000),
    rate_period: input("rate_period", { type: "number", min: 0.001, step: "any", value: 1 }),
    rate_unit: h("select", { name: "rate_unit", id: "limit-rate_unit" }, Object.keys(UNITS).map((u) => h("option", { value: u }, u))),
    rate_per_group: input("rate_per_group", { type: "checkbox" }),
    fair: input("fair", { type: "checkbox" }),
  };
  const c = controls;
  const el = h(
    "form",
    { class: "toolbar limit-form", "aria-label": "Set a kind's limits", onsubmit: (e) => (e.preventDefault(), onSave(read())) },
    h("label", {}, "Kind", c.kind),
    h("label", {}, "Max running", c.max_running),
    h("label", {}, "Per group", c.max_running_per_group),
    h("label", {}, "Rate: starts", c.rate_limit),
    h("label", {}, "per", h("span", { class: "inline" }, c.rate_period, c.rate_unit)),
    h("label", { class: "check" }, h("span", {}, c.rate_per_group, " rate per group")),
    h("label", { class: "check" }, h("span", {}, c.fair, " groups take turns")),
    h("button", { type: "submit", class: "primary", id: "limit-save" }, "Save"),
  );

  function read() {
    const body = {};
    const whole = (control) => (control.value.trim() === "" ? null : Number(control.value));
    if (whole(c.max_running) !== null) body.max_running = whole(c.max_running);
    if (whole(c.max_running_per_group) !== null) body.max_running_per_group = whole(c.max_running_per_group);
    if (whole(c.rate_limit) !== null) {
      body.rate = {
        limit: whole(c.rate_limit),
        period_seconds: Number(c.rate_period.value) * UNITS[c.rate_unit.value],
        per_group: c.rate_per_group.checked,
      };
    }
    if (c.fair.checked) body.fair = true;
    return { kind: c.kind.value.trim(), body };
  }

  function show(limit) {
    c.kind.value = limit.kind;
    c.max_running.value = limit.max_running ?? "";
    c.max_running_per_group.value = limit.max_running_per_group ?? "";
    c.rate_limit.value = limit.rate?.limit ?? "";
    const seconds = limit.rate?.period_seconds ?? 1;
    const unit = ["d", "h", "m"].find((u) => seconds >= UNITS[u] && seconds % UNITS[u] === 0) ?? "s";
    c.rate_period.value = seconds / UNITS[unit];
    c.rate_unit.value = unit;
    c.rate_per_group.checked = Boolean(limit.rate?.per_group);
    c.fair.checked = Boolean(limit.fair);
    c.kind.focus();
  }

  return { el, show };
}

export function mount(root, ctx) {
  const body = h("div", { class: "table-wrap" });
  let shown = "";

  async function save({ kind, body: limits }) {
    if (!kind) return;
    if (!Object.keys(limits).length) {
      ctx.notify("Give at least one limit: max running, per group, a rate, or turns.", "error");
      return;
    }
    try {
      await put(`limits/${encodeURIComponent(kind)}`, limits);
      ctx.notify(`The limits of “${kind}” are set.`);
    } catch (error) {
      ctx.fail(error);
    }
    await load(true);
  }

  async function remove(limit) {
    const ok = await confirm({
      title: `Remove the limits of “${limit.kind}”?`,
      body: `Jobs of “${limit.kind}” are leased without a cap, a rate or turns from the next lease on.`,
      action: "Remove",
    });
    if (!ok) return;
    try {
      await del(`limits/${encodeURIComponent(limit.kind)}`);
      ctx.notify(`The limits of “${limit.kind}” are removed.`);
    } catch (error) {
      ctx.fail(error);
    }
    await load(true);
  }

  const form = limitForm(save);
  fill(
    root,
    h("h1", {}, "Limits"),
    h(
      "p",
      { class: "note" },
      "A kind's limits hold across every worker and coordinator, from the next lease on: running jobs at once, running jobs per group key, starts per period (a job takes its weight), and groups taking turns. Saving a kind's limits replaces all of them.",
    ),
    h("section", { class: "panel limits-table" }, body),
    h("section", { class: "panel admin-only" }, h("h2", {}, "Set a kind's limits"), form.el),
    h("p", { class: "note read-only-note" }, "Changing limits needs an admin API token; this view is read-only."),
  );

  async function load(force = false) {
    let answer;
    try {
      answer = await get("limits");
    } catch (error) {
      ctx.fail(error);
      return;
    }
    const key = JSON.stringify(answer.limits);
    if (!force && key === shown) return; // keep a reader's selection
    shown = key;
    if (!answer.limits.length) {
      fill(body, h("p", { class: "empty-state" }, "No limits: every kind is leased as fast as workers ask."));
      return;
    }
    const head = h(
      "tr",
      {},
      ["Kind", "Max running", "Running now", "Per group", "Rate", "Turns"].map((label, i) =>
        h("th", { scope: "col", class: i >= 1 && i <= 3 ? "num" : undefined }, label),
      ),
      h("th", { scope: "col", class: "admin-only" }, h("span", { class: "visually-hidden" }, "Actions")),
    );
    fill(
      body,
      h(
        "table",
        { id: "limits" },
        h("caption", { class: "visually-hidden" }, "Limits"),
        h("thead", {}, head),
        h("tbody", {}, answer.limits.map((l) => row(l, form.show, remove))),
      ),
    );
  }

  load();
  const timer = setInterval(() => {
    if (!document.hidden) load();
  }, REFRESH_MS);
  return {
    unmount() {
      clearInterval(timer);
    },
  };
}
