package pgcluster

import (
	"os"
	"strings"
)

// filteredEnv is the current environment without variables that would
// change what initdb or postgres do: PG* (e.g. PGDATA, PGPORT) and the
// locale, which childEnv sets explicitly.
func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PG") || name == "LANG" || strings.HasPrefix(name, "LC_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// childEnv fixes the locale so initdb and postgres behave the same whatever
// the caller's environment.
func childEnv() []string {
	return append(filteredEnv(), "LC_ALL=C", "LANG=C")
}
