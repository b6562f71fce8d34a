// How numbers, times and durations read on the page.

const integer = new Intl.NumberFormat("en-US");

export function count(n) {
  return n === null || n === undefined ? "—" : integer.format(n);
}

/** A per-second rate: one decimal below 10, none above. */
export function rate(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "—";
  if (x === 0) return "0";
  return x < 10 ? x.toFixed(1) : integer.format(Math.round(x));
}

/** 0.35 -> "350 ms", 42 -> "42.0 s", 185 -> "3 m 05 s", 7300 -> "2 h 01 m". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  if (seconds === 0) return "0";
  const sign = seconds < 0 ? "−" : "";
  const s = Math.abs(seconds);
  if (s < 1) return `${sign}${Math.round(s * 1000)} ms`;
  if (s < 60) return `${sign}${s.toFixed(1)} s`;
  const pad = (n) => String(Math.floor(n)).padStart(2, "0");
  if (s < 3600) return `${sign}${Math.floor(s / 60)} m ${pad(s % 60)} s`;
  if (s < 86400) return `${sign}${Math.floor(s / 3600)} h ${pad((s % 3600) / 60)} m`;
  return `${sign}${Math.floor(s / 86400)} d ${pad((s % 86400) / 3600)} h`;
}

/** A short duration for axes and countdowns: "45 s", "12 m", "3 h". */
export function shortDuration(seconds) {
  const s = Math.abs(seconds);
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 90) return `${Math.round(s)} s`;
  // Minutes with one decimal below 10 m, so that axis steps of 1.5 or 2.5 m stay distinct.
  if (s < 600) return `${Number((s / 60).toFixed(1))} m`;
  if (s < 5400) return `${Math.round(s / 60)} m`;
  return `${Math.round(s / 3600)} h`;
}

/** A window's length in the largest unit that says it exactly: "1 s", "90 s", "1 min", "2 h". */
export function period(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  for (const [unit, length] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= length && seconds % length === 0) return `${seconds / length} ${unit}`;
  }
  return `${seconds} s`;
}

function pad2(n) {
  return String(n).padStart(2, "0");
}

/** An API time (RFC 3339) in the browser's time zone: "2025-11-30 14:03:22". */
export function localTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const date = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  return `${date} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** Seconds between two API times, or null when either is missing. */
export function secondsBetween(startIso, endIso) {
  if (!startIso || !endIso) return null;
  return (new Date(endIso).getTime() - new Date(startIso).getTime()) / 1000;
}

/** JSON as it should be read: indented; undefined (absent) shows as null. */
export function json(value) {
  return JSON.stringify(value ?? null, null, 2);
}
