package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// wrkScript is the Lua script that makes wrk send a cell's writes: POST
// /v1/ops/OP with {"id":ID,"amount":Amount} and account ID's token in
// Fencing-Token, as the lean client sends them. tokens[id-1] is account
// id's token; dist picks the accounts as the bench's clients do: uniform
// over all, account 1 alone (hot), or Zipf with the same exponent. Every
// request is built once, in init; request() only picks one. done() prints
// one line, "fencegw-wrk key=value ...", that parseWrk reads.
//
// The script holds the tokens: it is written to a file only this user
// may read and removed after the run.
func wrkScript(op string, tokens []string, dist Dist) string {
	ids := len(tokens)
	if dist == Hot {
		ids = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- fencegw bench: the %s cell's writes for wrk. Generated; holds tokens.\n", dist)
	fmt.Fprintf(&b, "local path = %s\nlocal dist = %s\nlocal zipf_s = %s\nlocal amount = %d\n",
		luaString("/v1/ops/"+op), luaString(string(dist)), strconv.FormatFloat(zipfS, 'g', -1, 64), Amount)
	b.WriteString("local tokens = {\n")
	for _, t := range tokens[:ids] {
		b.WriteString(luaString(t))
		b.WriteString(",\n")
	}
	b.WriteString("}\n")
	b.WriteString(wrkFunctions)
	return b.String()
}

// wrkFunctions are the script's functions (SCRIPTING in wrk's docs).
// setup runs in wrk's main Lua state, once per thread; init, request in
// each thread's own; done in the main one, after the run.
const wrkFunctions = `
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("seed", threads)
end

local reqs, cdf, total = {}, {}, 0
function init(args)
  math.randomseed(seed or 1)
  for id = 1, #tokens do
    local body = '{"id":' .. id .. ',"amount":' .. amount .. '}'
    reqs[id] = wrk.format("POST", path, {["Content-Type"] = "application/json", ["Fencing-Token"] = tokens[id]}, body)
  end
  if dist == "zipf" then
    for id = 1, #tokens do
      total = total + id ^ -zipf_s
      cdf[id] = total
    end
  end
end

function request()
  if dist == "zipf" then
    local u, lo, hi = math.random() * total, 1, #cdf
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if cdf[mid] < u then lo = mid + 1 else hi = mid end
    end
    return reqs[lo]
  end
  return reqs[math.random(#reqs)]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("fencegw-wrk duration_us=%d requests=%d status_errors=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d p50_us=%d p99_us=%d p999_us=%d max_us=%d\n",
    summary.duration, summary.requests, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
`

// luaString quotes s as a Lua string literal: printable ASCII as it is,
// quotes and backslashes escaped, every other byte as \ddd.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
