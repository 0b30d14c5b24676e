#!/usr/bin/env bash
# wrk.sh: the outside load generator's run of issue 28, in one command.
#
# Builds fencegw, then runs `fencegw bench --replicas 1 --wrk`: the gateway
# is a `fencegw serve` process of its own on loopback, serving the bench
# policy (testdata/bench) against DATABASE_URL, or without it a throwaway
# PostgreSQL (fsync on) deleted at the end, and an etcd embedded in the
# bench's process. Each cell (clients × distribution) is loaded twice on
# that same process, one after the other: by the bench's own client, then
# by wrk with a generated Lua script (as many connections as clients, the
# same accounts, the same operation, body and per-account tokens); the
# report sets wrk's writes/s and p50/p99/p99.9 beside the bench client's,
# and counts wrk's answers of status 400 or more and its socket errors: a
# cell with any is marked invalid. wrk's own text (--latency) goes to
# stderr as each cell runs.
#
#   deploy/loadtest/wrk.sh                       # 16 and 64 connections, uniform and hot, 5 s
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench deploy/loadtest/wrk.sh --json > wrk.json
#   CLIENTS=64 DISTS=uniform DURATION=10s deploy/loadtest/wrk.sh --idle-connections 10000
#
# Extra arguments go to `fencegw bench`. DATABASE_URL is used as it is:
# the bench's schema is created there (bench.accounts) and its fences
# written, so give it a database of its own. TIMEOUT bounds the whole run
# (default 15m); the bench also bounds each wrk run (its duration + 30 s).
set -euo pipefail
cd "$(dirname "$0")/../.."

export PATH="$PATH:/usr/local/go/bin"
if ! command -v wrk >/dev/null; then
	echo "wrk.sh: wrk is not installed (Debian, Ubuntu: apt-get install wrk)" >&2
	exit 1
fi
if ! command -v go >/dev/null; then
	echo "wrk.sh: Go is not installed" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/fencegw" ./cmd/fencegw

# timeout signals the bench alone; the bench stops its replica and wrk (the
# kernel kills the replica should the bench be killed; wrk ends on time).
timeout --kill-after=30s "${TIMEOUT:-15m}" "$work/fencegw" bench \
	--replicas 1 --wrk \
	--clients "${CLIENTS:-16,64}" --dist "${DISTS:-uniform,hot}" \
	--duration "${DURATION:-5s}" --warmup "${WARMUP:-1s}" \
	"$@"
