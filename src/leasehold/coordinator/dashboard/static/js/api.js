// The HTTP API, exactly as other clients use it, plus the bearer token the user gave.

const TOKEN_KEY = "leasehold.token";

// The page lives at <base>/ui/ and the API at <base>/: resolving against the page keeps
// working behind a proxy that mounts the coordinator under a path prefix.
const API_BASE = new URL("../", document.baseURI);

export class ApiError extends Error {
  /** status 0 means the coordinator could not be reached at all. */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  /** A refusal of the token (401) or of its role (403 forbidden); not another 403, such
   * as cross_site, which no token would change. */
  get isAuth() {
    return this.status === 401 || (this.status === 403 && this.code === "forbidden");
  }
}

// sessionStorage, not localStorage: the token is forgotten when the tab closes, and other
// tabs (or whoever uses the browser next) do not inherit it.
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// Lease expiries are the coordinator's times, and the browser's clock may be off. Every answer's
// Date header (one-second resolution) bounds the offset between the two clocks; intersecting
// those bounds converges on the offset, so countdowns do not depend on the browser's clock.
const offset = { low: -Infinity, high: Infinity };

function noteServerDate(header, sentAt, receivedAt) {
  const serverMs = Date.parse(header ?? "");
  if (Number.isNaN(serverMs)) return;
  const low = serverMs - receivedAt;
  const high = serverMs + 1000 - sentAt;
  if (low > offset.high || high < offset.low) {
    offset.low = -Infinity; // one of the clocks jumped: start again
    offset.high = Infinity;
  }
  offset.low = Math.max(offset.low, low);
  offset.high = Math.min(offset.high, high);
}

/** The coordinator's idea of now, in milliseconds since the epoch. */
export function serverNow() {
  if (!Number.isFinite(offset.low) || !Number.isFinite(offset.high)) return Date.now();
  return Date.now() + (offset.low + offset.high) / 2;
}

async function readBody(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** One API call: the parsed JSON answer, or an ApiError carrying the API's error code. */
export async function request(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  // Every change declares JSON, with a body or without one: the coordinator refuses
  // state-changing requests that do not (a cross-site form cannot set this type).
  if (body !== undefined || method !== "GET") headers["Content-Type"] = "application/json";
  const sentAt = Date.now();
  let response;
  try {
    response = await fetch(new URL(path, API_BASE), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "unreachable", "The coordinator cannot be reached.");
  }
  noteServerDate(response.headers.get("Date"), sentAt, Date.now());
  const data = await readBody(response);
  if (!response.ok) {
    const code = data?.error ?? "http_error";
    const message = data?.message ?? `The coordinator answered HTTP ${response.status}.`;
    throw new ApiError(response.status, code, message);
  }
  return data;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
export const put = (path, body) => request("PUT", path, body);
export const del = (path) => request("DELETE", path);

/** A query string from the non-empty entries of params. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(key, String(value));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}
