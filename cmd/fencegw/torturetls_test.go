package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/fencegw/fencegw/internal/torture/check"
)

// TestTortureEtcdTLS: with --etcd-tls the torture's etcd cluster serves
// TLS only and requires client certificates, as production etcd does; the
// gateways, the nemesis's snapshots and leader look-ups, and the epoch
// bump after a rollback all reach it with the run's certificates, under
// the CI profile's faults (etcd members killed and frozen among them),
// and the checker finds nothing. A gateway without them could not serve a
// single lease; one given the etcd user of the shell that runs the
// torture could not start.
func TestTortureEtcdTLS(t *testing.T) {
	bin := buildFencegw(t)
	cmd := exec.Command(bin, "torture", "--json", "--seed", "1", "--etcd-tls", "--etcd-rollback", "--rollback-every", "8s", "--min-rollbacks", "1", "--duration", "20s")
	// An operator's etcd settings, which the gateways would read and fail
	// on (no such file) were they not kept from them.
	cmd.Env = append(cmd.Environ(), "FENCEGW_ETCD_USER=operator", "FENCEGW_ETCD_PASSWORD_FILE=/nonexistent/etcd-password")
	var out, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &logs
	err := cmd.Run()
	var r check.Report
	if derr := json.NewDecoder(&out).Decode(&r); derr != nil {
		t.Fatalf("torture --etcd-tls: no report (%v); exit %v\n%s", derr, err, &logs)
	}
	t.Logf("etcd over TLS: %s faults %v events %v", r.Verdict, r.Faults, r.Events)
	if err != nil || !r.OK() {
		t.Fatalf("etcd over TLS: %v, %s\n%+v\n%s", err, r.Verdict, r.Violations, &logs)
	}
	if r.Events["ok"] < 20 || r.Faults["epoch-bump"] < 1 || r.Faults["etcd-rollback"] < 1 {
		t.Fatalf("the run did too little over TLS to prove anything: %v events, %v faults\n%s", r.Events, r.Faults, &logs)
	}
}
