// What the token in use may do. The coordinator decides (401/403); the page only mirrors it,
// hiding what would be refused.

import { ApiError, get, getToken, post, setToken } from "./api.js";
import { byId } from "./dom.js";

/**
 * mode: "checking" | "admin" (may requeue) | "read-only" (may read, not requeue)
 *       | "unauthorized" (401: no token, or a wrong one) | "forbidden" (403: may not read)
 *       | "unreachable"
 */
export const access = { mode: "checking", open: false };

const LABELS = {
  admin: "admin",
  "read-only": "read-only",
  unauthorized: "no access",
  forbidden: "no access",
};

const listeners = new Set();

export function onAccessChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function canAdmin() {
  return access.mode === "admin";
}

function set(mode, open = false) {
  const changed = access.mode !== mode || access.open !== open;
  access.mode = mode;
  access.open = open;
  document.body.classList.toggle("can-admin", mode === "admin");
  const badge = byId("access");
  badge.className = `access ${mode === "admin" ? "admin" : mode === "read-only" ? "read-only" : "denied"}`;
  badge.textContent = open && mode === "admin" ? "open access" : (LABELS[mode] ?? "");
  if (changed) for (const listener of listeners) listener(access);
}

/** The message to show for an API error, in the words an operator needs. */
export function describe(error) {
  if (!(error instanceof ApiError)) return String(error?.message ?? error);
  if (error.status === 401) {
    return getToken()
      ? "The coordinator refused this API token (401). Check it and enter it again above."
      : "This coordinator needs an API token (401). Enter one in the API token field above.";
  }
  if (error.status === 403) {
    return "This API token's role may not do that (403 forbidden). An admin token can.";
  }
  if (error.status === 0) return "The coordinator cannot be reached. Retrying…";
  return `${error.message} (${error.code}, HTTP ${error.status})`;
}

/** Called when any call was refused: the token changed meaning under us (e.g. revoked). */
export function noteRefusal(error) {
  if (error instanceof ApiError && error.status === 401) set("unauthorized");
  else if (error instanceof ApiError && error.status === 403 && access.mode === "admin") {
    set("read-only");
  }
}

// Ask the API what the token may do, without changing anything. Reading: GET /stats.
// Admin: a requeue of an id that cannot exist ("probe" is not a number). The route answers
// 404 before it touches the database, while authentication, checked first, answers 401/403.
async function probe() {
  try {
    await get("stats");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return set("unauthorized");
    if (error instanceof ApiError && error.status === 403) return set("forbidden");
    return set("unreachable");
  }
  try {
    await post("jobs/probe/requeue");
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return set("admin", !getToken());
    if (error instanceof ApiError && error.isAuth) return set("read-only");
    return set("unreachable"); // asked again after the next answer from /stats
  }
  return set("admin", !getToken()); // cannot happen: no job has that id
}

export function recheck() {
  return probe();
}

/** Wire the token field in the top bar. */
export function setUpTokenForm(onChange) {
  const form = byId("token-form");
  const input = byId("token-input");
  input.value = getToken();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    await probe();
    onChange();
  });
  byId("token-clear").addEventListener("click", async () => {
    input.value = "";
    setToken("");
    await probe();
    onChange();
  });
}
