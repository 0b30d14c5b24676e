package bench

import "os"

// Allocs is heap allocation per acknowledged write.
type Allocs struct {
	Objects float64 `json:"allocs_per_write"`
	Bytes   float64 `json:"bytes_per_write"`
}

// Process is what the run cost this process. With the gateway in process,
// every figure includes the load generator, and etcd when it is embedded;
// PostgreSQL is a process of its own.
type Process struct {
	// GatewayPath is nil when the gateway runs elsewhere.
	GatewayPath *Allocs `json:"gateway_path"`
	DirectPath  Allocs  `json:"direct_path"`
	// EmptyHTTP is the same HTTP client against a handler that does
	// nothing: the part of GatewayPath that is not the gateway's.
	EmptyHTTP Allocs `json:"empty_http_round_trip"`
	// EmptyHTTPLatency is that round trip's latency, one client: the part
	// of the 1-client overhead that is HTTP on loopback, not the gateway.
	EmptyHTTPLatency Percentiles `json:"empty_http_round_trip_latency"`
	// RSSBytes is VmRSS at the end, PeakRSSBytes VmHWM; 0 where
	// /proc/self/status is not available.
	RSSBytes     int64 `json:"rss_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

// meanAllocs is the per-write allocation over paths, weighted by writes.
func meanAllocs(paths []*Path) Allocs {
	var objects, bytes, writes float64
	for _, p := range paths {
		w := float64(p.Writes)
		objects += p.AllocsPerWrite * w
		bytes += p.BytesPerWrite * w
		writes += w
	}
	if writes == 0 {
		return Allocs{}
	}
	return Allocs{Objects: objects / writes, Bytes: bytes / writes}
}

// readRSS returns VmRSS and VmHWM of this process in bytes; 0 where
// /proc is not available.
func readRSS() (rss, peak int64) {
	rss, peak, _ = processRSS(os.Getpid())
	return rss, peak
}
