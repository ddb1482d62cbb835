#!/usr/bin/env bash
# Retry a network step (apt-get, pip, debootstrap, a .deb fetch) with
# backoff, a bounded number of times, and when it gives up say what failed:
# the step's name and the lines of its output that name a mirror, an index
# or a package.
#
#   .ci/retry.sh [--what TEXT] COMMAND [ARG]...     run it
#   source .ci/retry.sh; retry [--what TEXT] ...    the same as a function
#
# NG_RETRY_TRIES  tries in all (default 4)
# NG_RETRY_DELAY  seconds before the second try, doubled after each
#                 (default 5: waits 5, 10, 20 s, so at most 35 s in all)
# The command's stderr is merged into its stdout.

# Output lines that name what failed (apt, debootstrap, pip, curl-like).
NG_RETRY_ERRORS=${NG_RETRY_ERRORS:-'^(E|Err|W):|Failed to fetch|Failed getting|Couldn.t download|Could not|No matching distribution|ERROR|Temporary failure|Connection (refused|reset|timed out)|timed out|Hash Sum mismatch|Unable to locate|[^0-9][45][0-9][0-9] [A-Z][a-z]'}

retry() {
    local what=""
    if [ "${1:-}" = --what ]; then
        what=$2
        shift 2
    fi
    [ -n "$what" ] || what="$*"
    local tries=${NG_RETRY_TRIES:-4} delay=${NG_RETRY_DELAY:-5}
    local log try rc
    log=$(mktemp "${TMPDIR:-/tmp}/ng-retry.XXXXXX")
    for ((try = 1; ; try++)); do
        rc=0
        "$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
        if [ "$rc" -eq 0 ]; then
            rm -f "$log"
            return 0
        fi
        [ "$try" -lt "$tries" ] || break
        echo "retry: $what failed (rc=$rc, try $try of $tries); next try in $delay s" >&2
        sleep "$delay"
        delay=$((delay * 2))
    done
    {
        echo "retry: giving up on $what after $tries tries (last rc=$rc). What failed:"
        grep -E "$NG_RETRY_ERRORS" "$log" | sed 's/^/    /' ||
            echo "    (no line of the output names it; the output is above)"
    } >&2
    rm -f "$log"
    return "$rc"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    retry "$@"
fi
