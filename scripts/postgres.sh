#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb + pg_ctl in a temp directory, listening
# only on a Unix socket there (no TCP port to collide with anything), with durability off.
#
#   eval "$(scripts/postgres.sh start)"   # prints the exports: YIELDSTAR_PG_DSN, YIELDSTAR_PG_DIR
#   scripts/postgres.sh stop "$YIELDSTAR_PG_DIR"   # stops it and removes the directory
#   scripts/postgres.sh install           # Debian's postgresql, if no server binaries are found
#
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user (made by
# Debian's package) or, failing that, as a system user `yieldstar-pg` made here.
set -euo pipefail

find_bindir() {
    local dir
    if command -v pg_config >/dev/null 2>&1; then
        dir="$(pg_config --bindir)"
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
    fi
    # Debian keeps the server binaries out of PATH: take the newest major version.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
    done
    return 1
}

as_owner() {
    # Run a command as the cluster's owner (ourselves unless we are root).
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$OWNER" -- "$@"
    else
        "$@"
    fi
}

pick_owner() {
    if [ "$(id -u)" -ne 0 ]; then OWNER="$(id -un)"; return; fi
    if id postgres >/dev/null 2>&1; then OWNER=postgres; return; fi
    if ! id yieldstar-pg >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin yieldstar-pg
    fi
    OWNER=yieldstar-pg
}

command_install() {
    if find_bindir >/dev/null; then return 0; fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "postgres.sh: no PostgreSQL server binaries found; install Debian's postgresql" >&2
        return 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    find_bindir >/dev/null
}

command_start() {
    local bindir dir
    if ! bindir="$(find_bindir)"; then
        echo "postgres.sh: no PostgreSQL server binaries found (scripts/postgres.sh install)" >&2
        return 1
    fi
    pick_owner
    dir="$(mktemp -d "${TMPDIR:-/tmp}/yieldstar-pg.XXXXXX")"
    chmod 0700 "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown "$OWNER" "$dir"; fi
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 \
        --locale=C --no-sync >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        return 1
    }
    # Many runtimes at once (every simulation opens one, tests run in parallel): room for
    # connections; no fsync, since the cluster is thrown away.
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 \
            -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null || {
        cat "$dir/server.log" >&2
        return 1
    }
    echo "export YIELDSTAR_PG_DSN='host=$dir dbname=postgres user=postgres'"
    echo "export YIELDSTAR_PG_DIR='$dir'"
}

command_stop() {
    local bindir dir="${1:-}"
    if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
        echo "postgres.sh stop: $dir holds no cluster started by postgres.sh" >&2
        return 1
    fi
    bindir="$(find_bindir)"
    OWNER="$(stat -c %U "$dir/data")"
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}

case "${1:-}" in
    install) command_install ;;
    start) command_start ;;
    stop) command_stop "${2:-}" ;;
    *)
        echo "usage: scripts/postgres.sh install | start | stop DIR" >&2
        exit 2
        ;;
esac
