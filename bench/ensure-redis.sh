#!/usr/bin/env bash
# Make sure a redis-server binary exists, for bench/throughput.py, bench/latency.py and
# bench/enqueue.py --compare (huey and Dramatiq on Redis). The benchmarks start their own
# server on a free loopback port: we neither need nor use the service the package may start.
#
# Exit 0 when redis-server is on PATH (a no-op when it already was), non-zero otherwise.
set -euo pipefail

log() { printf 'ensure-redis: %s\n' "$*" >&2; }

if command -v redis-server >/dev/null 2>&1; then
    log "redis-server found: $(command -v redis-server)"
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    log "redis-server not found; install it (Debian: apt-get install redis-server)"
    exit 1
fi
log "redis-server not found; installing Debian's redis-server package"
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server
# The package may start its own service on port 6379; the benchmarks do not use it.
if command -v redis-server >/dev/null 2>&1; then
    log "redis-server installed: $(command -v redis-server)"
    exit 0
fi
log "apt-get install redis-server succeeded but redis-server is still missing"
exit 1
