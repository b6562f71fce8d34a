// Small SVG line charts, drawn from scratch: the page loads nothing from elsewhere.

import { fill, h, svg } from "./dom.js";
import { shortDuration } from "./format.js";

const HEIGHT = 150;
const PAD = { left: 46, right: 10, top: 10, bottom: 20 };

/** The smallest of 1, 2, 2.5, 5 times a power of ten that is >= x. */
function niceCeil(x) {
  if (!(x > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * power >= x * 0.999999) return step * power;
  }
  return 10 * power;
}

/** An SVG path through the points, broken where a value is null (no data there). */
function pathOf(points, x, y) {
  let d = "";
  let pen = false;
  for (const p of points) {
    if (p.v === null || p.v === undefined || !Number.isFinite(p.v)) {
      pen = false;
      continue;
    }
    d += `${pen ? "L" : "M"}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`;
    pen = true;
  }
  return d;
}

function lastValue(points) {
  for (let i = points.length - 1; i >= 0; i--) {
    if (points[i].v !== null && points[i].v !== undefined) return points[i].v;
  }
  return null;
}

/**
 * A panel with a title, a legend showing each series' latest value, and the chart.
 * series: [{key, name}]; key is also the CSS colour class (s-<key>).
 * format(value) writes values for the legend and the y axis; floor is the smallest y range;
 * integer keeps gridlines on whole numbers (for counts). axisFormat, if given, writes the y
 * axis instead of format: the axis has room for a few characters only ("1 m 20 s" would be cut).
 */
export class LineChart {
  constructor(title, series, { format, axisFormat, floor = 1, integer = false }) {
    this.title = title;
    this.integer = integer;
    this.series = series;
    this.format = format;
    this.axisFormat = axisFormat ?? format;
    this.floor = floor;
    this.values = new Map();
    const legend = h("ul", { class: "legend" });
    for (const s of series) {
      const value = h("span", { class: "value" }, "—");
      this.values.set(s.key, value);
      legend.append(h("li", { class: `s-${s.key}` }, h("span", { class: "swatch" }), s.name, value));
    }
    this.canvas = h("div");
    this.el = h(
      "section",
      { class: "panel chart-panel", "aria-label": title },
      h("div", { class: "chart-head" }, h("h2", {}, title), legend),
      this.canvas,
    );
  }

  /** data: {key: [{t (ms), v}]}, drawn over [end - windowMs, end]. */
  update(data, end, windowMs) {
    const width = Math.max(this.canvas.clientWidth || 0, 240);
    const plotW = width - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom;
    const start = end - windowMs;
    let max = 0;
    let points = 0;
    for (const s of this.series) {
      for (const p of data[s.key] ?? []) {
        if (p.t >= start && Number.isFinite(p.v)) {
          max = Math.max(max, p.v);
          points += 1;
        }
      }
      this.values.get(s.key).textContent = this.format(lastValue(data[s.key] ?? []));
    }
    let top = niceCeil(Math.max(max, this.floor));
    if (this.integer && !Number.isInteger(top / 2)) top *= 2; // counts: no "2.5" gridline

    const x = (t) => PAD.left + ((t - start) / windowMs) * plotW;
    const y = (v) => PAD.top + plotH - (Math.min(v, top) / top) * plotH;
    const summary = this.series
      .map((s) => `${s.name} ${this.format(lastValue(data[s.key] ?? []))}`)
      .join(", ");
    const chart = svg("svg", {
      class: "chart",
      viewBox: `0 0 ${width} ${HEIGHT}`,
      role: "img",
      "aria-label": `${this.title}, last ${Math.round(windowMs / 1000)} seconds. Now: ${summary}.`,
    });
    for (const fraction of [0, 0.5, 1]) {
      const gy = y(top * fraction);
      chart.append(
        svg("line", { class: "grid-line", x1: PAD.left, x2: width - PAD.right, y1: gy, y2: gy }),
        svg("text", { class: "axis-label", x: PAD.left - 6, y: gy + 4, "text-anchor": "end" },
          this.axisFormat(top * fraction)),
      );
    }
    const axisY = HEIGHT - 4;
    chart.append(
      svg("text", { class: "axis-label", x: PAD.left, y: axisY }, `−${shortDuration(windowMs / 1000)}`),
      svg("text", { class: "axis-label", x: width - PAD.right, y: axisY, "text-anchor": "end" }, "now"),
    );
    if (points < 2) {
      chart.append(svg("text", { class: "empty", x: width / 2, y: HEIGHT / 2, "text-anchor": "middle" },
        "collecting data…"));
    }
    for (const s of this.series) {
      const d = pathOf((data[s.key] ?? []).filter((p) => p.t >= start), x, y);
      if (d) chart.append(svg("path", { class: `series s-${s.key}`, d }));
    }
    fill(this.canvas, chart);
  }
}

/** A thin bar split by share, e.g. jobs by status. parts: [{key, value, label}]. */
export function proportionBar(parts) {
  const total = parts.reduce((sum, p) => sum + p.value, 0);
  const bar = h("div", {
    class: "mix",
    role: "img",
    "aria-label": parts.map((p) => `${p.label} ${p.value}`).join(", "),
  });
  for (const p of parts) {
    if (!total || !p.value) continue;
    const span = h("span", { class: `s-${p.key}` });
    span.style.width = `${(100 * p.value) / total}%`; // CSSOM, which the CSP allows
    span.style.background = "currentColor";
    bar.append(span);
  }
  return bar;
}
