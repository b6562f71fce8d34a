#!/usr/bin/env bash
# Make sure Debian's chromium and its matching chromedriver exist, for the dashboard's
# browser tests (tests/browser). Nothing is downloaded at test time: the tests drive
# /usr/bin/chromedriver with Selenium, never Selenium Manager or a browser download.
#
# A no-op when both are there. Otherwise, as root with apt-get, installs them.
# When that is impossible: outside CI, warns loudly and exits 0 (the browser tests then skip
# with the same warning); in CI (CI set), exits non-zero, since CI must run them.
set -euo pipefail

log() { printf 'ensure-browser: %s\n' "$*" >&2; }

PACKAGES=(chromium chromium-driver)

present() {
    [[ -x /usr/bin/chromedriver ]] && { [[ -x /usr/lib/chromium/chromium ]] || [[ -x /usr/bin/chromium ]]; }
}

if present; then
    log "chromium and chromedriver found"
    exit 0
fi

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!! ensure-browser: chromium and chromedriver are not available: $*"
        echo "!! Install them (Debian: apt-get install chromium chromium-driver)."
        echo "!! The dashboard's browser tests will be SKIPPED (they fail in CI)."
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo
    } >&2
    if [[ -n ${CI:-} ]]; then
        exit 1
    fi
    exit 0
}

if [[ $(id -u) -ne 0 ]]; then
    fail "not found, and not root, so cannot install them"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    fail "not found, and apt-get is not available to install them"
fi

log "+ apt-get update -q"
apt-get update -q || fail "not found, and apt-get update failed"
log "+ DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${PACKAGES[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${PACKAGES[@]}" \
    || fail "not found, and apt-get install ${PACKAGES[*]} failed"

if present; then
    log "chromium and chromedriver installed"
    exit 0
fi
fail "apt-get install succeeded but /usr/bin/chromedriver or chromium is still missing"
