// Package pgcluster runs a throwaway PostgreSQL server from the locally
// installed server binaries, for `fencegw dev` without a DATABASE_URL and for tests.
package pgcluster
