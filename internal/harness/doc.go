// Package harness holds what exercises the product from outside: the
// benchmark (bench), the fault-injection run and its checker (torture)
// with its means (pause: SIGSTOP and /proc; cgroupcpu: CPU throttling;
// clockskew: the workers' injected clocks), the test gateways and shared
// test setup (testgw, testenv), test credentials (testcerts, testjwt),
// and the documentation's test tools (markdown, transcript). They import
// the product packages; only cmd/ and tests may import them
// (TestLayering), so no arrow runs from the product back up to its
// harnesses; examples/internal/storytest, the refund stories' shared test
// setup, is one kept beside them. Beside this directory, internal/ holds the leaf helpers
// product packages may use (buildinfo, clip, reload, timeout), and
// internal/devserver the servers `fencegw dev` and the tests start (a
// throwaway PostgreSQL, an embedded etcd).
package harness
