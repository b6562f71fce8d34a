// An error as a reader wants it: the exception first, then, for a Python traceback, the
// frames of the application's code, with the frames that only called the handler (inside
// leasehold's worker, asyncio, threads) folded away. Any other error is shown as it is.

import { h } from "./dom.js";

// `  File "/srv/app/jobs.py", line 9, in send` opens a frame; its source line and the
// carets under it are indented deeper.
const FRAME = /^(\s*)File "([^"]*)", line \d+/;
// Code that runs a handler rather than being it: leasehold's worker and typed tasks, and
// the interpreter's machinery they run it on.
const INTERNAL = /[\\/]leasehold[\\/](worker|tasks)[\\/]|[\\/]asyncio[\\/]|[\\/]concurrent[\\/]futures[\\/]|[\\/]threading\.py$/;

/** The last non-blank line of an error: for a traceback, the exception and its message. */
export function errorLine(text) {
  const lines = (text ?? "").split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.length ? lines[lines.length - 1] : "";
}

/** The error's lines in runs: {internal, lines}, consecutive internal frames in one run. */
function runs(text) {
  const found = [];
  const push = (internal, line) => {
    const last = found.at(-1);
    if (last && last.internal === internal) last.lines.push(line);
    else found.push({ internal, lines: [line] });
  };
  let frame = null; // {indent, internal} of the frame whose lines follow
  for (const line of text.split("\n")) {
    const opens = FRAME.exec(line);
    if (opens) {
      frame = { indent: opens[1].length, internal: INTERNAL.test(opens[2]) };
      push(frame.internal, line);
      continue;
    }
    const indent = line.length - line.trimStart().length;
    if (frame && line.trim() && indent > frame.indent) {
      push(frame.internal, line);
      continue;
    }
    frame = null;
    push(false, line);
  }
  return found;
}

function frameCount(lines) {
  return lines.filter((l) => FRAME.test(l)).length;
}

/** The error's view: its exception line, then the text, internal frames folded. */
export function errorView(text) {
  const exception = errorLine(text);
  const parts = runs(text.replace(/\s+$/, "")).map(({ internal, lines }) => {
    const body = h("pre", {}, lines.join("\n"));
    if (!internal) return body;
    const n = frameCount(lines);
    return h(
      "details",
      { class: "internal-frames" },
      h("summary", {}, `${n} frame${n === 1 ? "" : "s"} inside the worker (how the handler was called)`),
      body,
    );
  });
  const single = !text.trim().includes("\n");
  // tabindex: a long traceback scrolls, and keyboard users must be able to scroll it too.
  return h(
    "div",
    { class: "traceback", tabindex: "0" },
    h("p", { class: "exception" }, exception),
    single ? null : parts,
  );
}
