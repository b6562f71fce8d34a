// Live lease countdowns: lease_expires_at minus the coordinator's now, ticking every second.

import { serverNow } from "./api.js";
import { h } from "./dom.js";
import { duration } from "./format.js";

function text(remaining) {
  if (remaining > 0) {
    return remaining >= 60 ? `${duration(remaining)} left` : `${Math.ceil(remaining)} s left`;
  }
  // The reaper runs every second or so; until it does, the job still shows as running.
  return `expired ${duration(-remaining)} ago`;
}

export class Countdowns {
  constructor() {
    this.items = [];
    this.timer = setInterval(() => this.tick(), 1000);
  }

  /** An element that counts down to expiresAt; the bar shows what is left of the lease. */
  make(leasedAt, expiresAt) {
    const label = h("span");
    const bar = h("span");
    const el = h("div", { class: "countdown" }, label, h("div", { class: "bar", "aria-hidden": "true" }, bar));
    const item = {
      el,
      label,
      bar,
      expires: Date.parse(expiresAt),
      total: Math.max(1, (Date.parse(expiresAt) - Date.parse(leasedAt)) / 1000),
    };
    this.items.push(item);
    this.update(item);
    return el;
  }

  update(item) {
    const remaining = (item.expires - serverNow()) / 1000;
    item.label.textContent = text(remaining);
    item.el.classList.toggle("expired", remaining <= 0);
    item.bar.style.width = `${Math.max(0, Math.min(100, (100 * remaining) / item.total))}%`;
  }

  tick() {
    this.items = this.items.filter((item) => item.el.isConnected);
    for (const item of this.items) this.update(item);
  }

  stop() {
    clearInterval(this.timer);
    this.items = [];
  }
}
