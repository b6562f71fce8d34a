#!/usr/bin/env bash
# Make sure the programs a test needs exist, installing Debian's package when they do not:
#
#   scripts/ensure-debian-package.sh PACKAGE PROGRAM...
#
# (PROGRAM: a name, looked for on the PATH and in /usr/sbin.)
#
# `make test` runs it for nginx (tests/integration/test_behind_nginx.py: nginx in front of a
# coordinator, as README's configuration has it) and for prometheus (prometheus and promtool:
# tests/integration/test_alerts.py checks deploy/prometheus/ and runs the rules in a real
# Prometheus). The tests start their own servers, as an unprivileged user where it matters,
# on loopback ports: the package's own service is not started while it is installed (a
# policy-rc.d that says no, when none is there), nor used.
#
# A no-op when every PROGRAM is there. Otherwise, as root with apt-get, installs PACKAGE
# (without its recommendations). Exit 0 when the programs are there, non-zero otherwise.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: $0 PACKAGE PROGRAM..." >&2
    exit 2
fi
package=$1
shift

log() { printf 'ensure-%s: %s\n' "$package" "$*" >&2; }

# On the PATH, or in /usr/sbin (where Debian puts nginx, off a user's PATH).
present() {
    local program
    for program in "$@"; do
        command -v "$program" >/dev/null 2>&1 || [[ -x /usr/sbin/$program ]] || return 1
    done
}

if present "$@"; then
    log "$* found"
    exit 0
fi

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!! ensure-$package: $* "
        echo "!! Install Debian's $package package (apt-get install $package)."
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo
    } >&2
    exit 1
}

if [[ $(id -u) -ne 0 ]]; then
    fail "not found, and not root, so cannot install it"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    fail "not found, and apt-get is not available to install it"
fi

# Installing a server package starts its service (nginx on port 80, Prometheus on 9090)
# unless a policy says no; the tests need the programs, not a service.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi

apt() {
    log "+ apt-get $*"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@"
}
apt update -q || fail "not found, and apt-get update failed"
apt install -y -q --no-install-recommends "$package" \
    || fail "not found, and apt-get install $package failed"

if present "$@"; then
    log "$* installed"
    exit 0
fi
fail "apt-get install $package succeeded but $* still missing"
