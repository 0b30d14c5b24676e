package bench

import (
	"math/rand/v2"
	"testing"
)

func TestPickerStaysInRange(t *testing.T) {
	for _, tc := range []struct {
		dist     Dist
		minShare float64 // of writes to account 1
		maxShare float64
	}{
		{Uniform, 0, 0.01},
		{Hot, 1, 1},
		{Zipf, 0.05, 0.30},
	} {
		t.Run(string(tc.dist), func(t *testing.T) {
			next := tc.dist.picker(rand.New(rand.NewPCG(1, 2)))
			const draws = 100_000
			ones := 0
			for range draws {
				id := next()
				if id < 1 || id > Accounts {
					t.Fatalf("picked account %d, want 1 to %d", id, Accounts)
				}
				if id == 1 {
					ones++
				}
			}
			if share := float64(ones) / draws; share < tc.minShare || share > tc.maxShare {
				t.Errorf("account 1 got %.3f of the writes, want %.2f to %.2f", share, tc.minShare, tc.maxShare)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		clients, dists string
		ok             bool
	}{
		{"1,4,16,64", "uniform,hot,zipf", true},
		{" 2 ", "zipf", true},
		{"0", "uniform", false},
		{"1,,4", "uniform", false},
		{"1", "gaussian", false},
		{"1", "", false},
	} {
		_, cerr := ParseClients(tc.clients)
		_, derr := ParseDists(tc.dists)
		if ok := cerr == nil && derr == nil; ok != tc.ok {
			t.Errorf("ParseClients(%q), ParseDists(%q) = %v, %v; want ok %v", tc.clients, tc.dists, cerr, derr, tc.ok)
		}
	}
}

func TestGatewayAddr(t *testing.T) {
	for _, tc := range []struct {
		url, addr string // addr "": refused
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080"},
		{"http://127.0.0.1:8080/", "127.0.0.1:8080"},
		{"http://localhost:8080", "localhost:8080"},
		{"http://[::1]:8080", "[::1]:8080"},
		{"http://127.0.0.1", "127.0.0.1:80"},
		{"https://127.0.0.1:8443", ""}, // the load generator speaks plain HTTP
		{"http://127.0.0.1:8080/v1", ""},
		{"http://10.0.0.5:8080", ""},
		{"http://gateway.internal:8080", ""},
		{"127.0.0.1:8080", ""},
	} {
		addr, err := gatewayAddr(tc.url)
		if addr != tc.addr || (err == nil) != (tc.addr != "") {
			t.Errorf("gatewayAddr(%q) = %q, %v; want %q", tc.url, addr, err, tc.addr)
		}
	}
}
