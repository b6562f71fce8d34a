// Form controls shared by the list views.

import { h } from "./dom.js";

const STATUSES = ["waiting", "queued", "running", "completed", "dead", "cancelled"];

export function statusSelect(value) {
  return h(
    "select",
    { name: "status" },
    h("option", { value: "" }, "any"),
    STATUSES.map((s) => h("option", { value: s, selected: s === value }, s)),
  );
}

/** A free-text kind field that suggests the kinds /stats knows. */
export function kindInput(value, id) {
  const list = h("datalist", { id: `${id}-list` });
  const input = h("input", {
    name: "kind",
    id,
    list: `${id}-list`,
    value: value ?? "",
    placeholder: "any kind",
    maxlength: 200,
    spellcheck: "false",
  });
  return {
    input,
    list,
    setKinds(kinds) {
      const known = [...list.options].map((o) => o.value).join("\n");
      if (known === kinds.join("\n")) return;
      list.replaceChildren(...kinds.map((k) => h("option", { value: k })));
    },
  };
}

export function pageSizeSelect(value) {
  return h(
    "select",
    { name: "limit" },
    [25, 50, 100, 250].map((n) => h("option", { value: n, selected: n === value }, String(n))),
  );
}

export function labelled(text, control, extra) {
  return h("label", {}, text, control, extra);
}

/** Keep the view's filters in the address (shareable), without re-running the router. */
export function rememberInHash(path, params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) q.set(key, value);
  const text = q.toString();
  history.replaceState(null, "", `#/${path}${text ? `?${text}` : ""}`);
}
