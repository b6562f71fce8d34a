// What the token in use may do. The coordinator decides (401/403); the page only mirrors it,
// hiding what would be refused.

import { ApiError, get, getToken, post, setToken } from "./api.js";
import { byId } from "./dom.js";

/**
 * mode: "checking" | "admin" (may requeue) | "read-only" (may read, not requeue)
 *       | "unauthorized" (401: no token, or a wrong one) | "forbidden" (403: may not read)
 *       | "refused" (the coordinator refuses this page, whatever the token: e.g. 421)
 *       | "unreachable"
 * problem: the ApiError behind "refused", or behind "read-only" when changes are refused
 *          for another reason than the token (403 cross_site behind a proxy, say); null
 *          otherwise. The page shows its real code and message, not a guess.
 */
export const access = { mode: "checking", open: false, problem: null };

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

function set(mode, open = false, problem = null) {
  const changed = access.mode !== mode || access.open !== open || access.problem !== problem;
  access.mode = mode;
  access.open = open;
  access.problem = problem;
  document.body.classList.toggle("can-admin", mode === "admin");
  document.body.classList.toggle("has-problem", problem !== null);
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
  if (error.isAuth) {
    return "This API token's role may not do that (403 forbidden). An admin token can.";
  }
  if (error.status === 0) return "The coordinator cannot be reached. Retrying…";
  return `${error.message} (${error.code}, HTTP ${error.status})`;
}

/** What the page says while the coordinator refuses it for another reason than its token. */
export function describeProblem() {
  const problem = access.problem;
  if (!problem) return "";
  const what = access.mode === "refused" ? "this page" : "changes from this page";
  return `The coordinator refuses ${what}: ${describe(problem)}`;
}

/** Called when any call was refused: the token changed meaning under us (e.g. revoked). */
export function noteRefusal(error) {
  if (error instanceof ApiError && error.status === 401) set("unauthorized");
  else if (error instanceof ApiError && error.isAuth && access.mode === "admin") {
    set("read-only");
  }
}

// A 4xx other than the token's refusals: the coordinator refuses the request itself (421
// from an open coordinator behind a proxy, 403 cross_site from a proxy it was not told of).
function refusedOtherwise(error) {
  return error instanceof ApiError && error.status >= 400 && error.status < 500 && !error.isAuth;
}

// Ask the API what the token may do, without changing anything. Reading: GET /stats.
// Admin: a requeue of an id that cannot exist ("probe" is not a number). The route answers
// 404 before it touches the database, while authentication, checked first, answers 401/403.
async function probe() {
  try {
    await get("stats");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return set("unauthorized");
    if (error instanceof ApiError && error.isAuth) return set("forbidden");
    if (refusedOtherwise(error)) return set("refused", false, error);
    return set("unreachable");
  }
  try {
    await post("jobs/probe/requeue");
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return set("admin", !getToken());
    if (error instanceof ApiError && error.isAuth) return set("read-only");
    if (refusedOtherwise(error)) return set("read-only", false, error);
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
