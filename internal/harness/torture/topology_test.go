package torture

import (
	"slices"
	"strings"
	"testing"
)

// TestOwnEtcdEnv: the gateways and `epoch bump` the torture starts talk
// to its own etcd cluster, whatever etcd an operator's
// environment points at: without this, ETCDCTL_CACERT in the shell that
// runs the torture turns TLS on in every gateway, and none starts.
func TestOwnEtcdEnv(t *testing.T) {
	for _, kv := range [][2]string{
		{"ETCDCTL_ENDPOINTS", "https://prod:2379"}, {"ETCDCTL_CACERT", "/ca.crt"},
		{"FENCEGW_ETCD", "prod:2379"}, {"FENCEGW_ETCD_CACERT", "/ca.crt"}, {"FENCEGW_ETCD_USER", "ops"},
		{"TORTURE_TEST_KEPT", "yes"},
	} {
		t.Setenv(kv[0], kv[1])
	}
	env := ownEtcdEnv()
	for _, kv := range env {
		if strings.HasPrefix(kv, "ETCDCTL_") || strings.HasPrefix(kv, "FENCEGW_ETCD") {
			t.Errorf("a child's environment holds %s", kv)
		}
	}
	if !slices.Contains(env, "TORTURE_TEST_KEPT=yes") {
		t.Errorf("a child's environment lost the rest: %v", env)
	}
}
