#!/usr/bin/env bash
# Make sure the PostgreSQL server binaries (initdb, pg_ctl, postgres) exist,
# for the tests' throwaway server (tests/pgserver.py).
#
# Looks where tests/pgserver.py looks: initdb on PATH, then
# /usr/lib/postgresql/*/bin (Debian's layout). If they are missing and we are
# root with apt-get, installs Debian's "postgresql" package. The tests start
# their own server: we neither need nor use the Debian cluster that the
# package may start.
#
# Exit 0 when the binaries are there (a no-op when they already were),
# non-zero otherwise.
set -euo pipefail

log() { printf 'ensure-postgres: %s\n' "$*" >&2; }

has_binaries() {
    local dir=$1
    [[ -x $dir/initdb && -x $dir/pg_ctl && -x $dir/postgres ]]
}

find_pg_bin() {
    local initdb dir
    if initdb=$(command -v initdb 2>/dev/null); then
        for dir in "$(dirname -- "$initdb")" "$(dirname -- "$(readlink -f -- "$initdb")")"; do
            if has_binaries "$dir"; then
                printf '%s\n' "$dir"
                return 0
            fi
        done
    fi
    # Newest version first.
    while IFS= read -r dir; do
        if has_binaries "$dir"; then
            printf '%s\n' "$dir"
            return 0
        fi
    done < <(compgen -G '/usr/lib/postgresql/*/bin' | sort -t/ -k5,5 -V -r)
    return 1
}

if bin_dir=$(find_pg_bin); then
    log "PostgreSQL server binaries found in $bin_dir"
    exit 0
fi

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!! ensure-postgres: PostgreSQL server binaries (initdb, pg_ctl, postgres)"
        echo "!! are not available: $*"
        echo "!! Install the PostgreSQL server (Debian: apt-get install postgresql)."
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo
    } >&2
    exit 1
}

if [[ $(id -u) -ne 0 ]]; then
    fail "not found, and not root, so cannot install them"
fi
if ! command -v apt-get >/dev/null 2>&1; then
    fail "not found, and apt-get is not available to install them"
fi

log "PostgreSQL server binaries not found; installing Debian's postgresql package"
log "+ apt-get update -q"
apt-get update -q || fail "not found, and apt-get update failed"
log "+ DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql \
    || fail "not found, and apt-get install postgresql failed"

if bin_dir=$(find_pg_bin); then
    log "PostgreSQL server binaries installed in $bin_dir"
    exit 0
fi
fail "apt-get install postgresql succeeded but initdb/pg_ctl/postgres are still missing"
