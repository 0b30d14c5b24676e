package bench

import (
	"errors"
	"math/rand/v2"
	"net"
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

// FuzzGatewayAddr: whatever the URL, gatewayAddr either refuses it or
// returns a host:port on loopback that dials as given.
func FuzzGatewayAddr(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080", "http://localhost", "http://[::1]:1/", "https://127.0.0.1", "http://10.0.0.1:80", "http://user@127.0.0.1:1", "http://127.0.0.1:1/x?y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		addr, err := gatewayAddr(raw)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("gatewayAddr(%q) error %v does not wrap ErrConfig", raw, err)
			}
			return
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			t.Fatalf("gatewayAddr(%q) = %q: not host:port (%v)", raw, addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("gatewayAddr(%q) = %q: not on loopback", raw, addr)
		}
	})
}
