package main

import "fmt"

// fdReserve is what the default --max-connections leaves of the file
// descriptors a process may open: a quarter, at most 1,024. They are the
// PostgreSQL pool's connections, etcd's, the ops and debug listeners and
// their clients, the credential files read on change, the log. Clients
// that took every descriptor would make Accept fail (net/http then
// backs off, up to a second per try, for every client) and, worse, leave
// the pool unable to replace a PostgreSQL connection: the limit keeps
// those for the backends, so the connected clients are still served.
const fdReserve = 1024

// defaultMaxConnections is the limit when the fd limit is unknown (not
// Unix): net/http's own memory per idle connection is a few KiB, so
// 10,000 is a few tens of MiB.
const defaultMaxConnections = 10_000

// maxConnections is --max-connections, or its default from the file
// descriptor limit, and what the default was derived from, for the log.
func maxConnections(flag int) (limit int, why string) {
	if flag > 0 {
		return flag, "--max-connections"
	}
	nofile := openFileLimit()
	if nofile <= 0 {
		return defaultMaxConnections, "default: the file descriptor limit is unknown here"
	}
	limit = connectionsFor(nofile)
	return limit, fmt.Sprintf("default: %d open files allowed (RLIMIT_NOFILE), less %d for the backends", nofile, nofile-uint64(limit))
}

// connectionsFor is the default limit of a process allowed nofile
// descriptors: nofile less fdReserve, or less a quarter when that is
// smaller, at least one.
func connectionsFor(nofile uint64) int {
	reserve := min(uint64(fdReserve), nofile/4)
	return int(max(1, min(nofile-reserve, 1<<30)))
}
