// Package tokens defines fencing tokens as values: the text form E:R,
// parsing and ordering, resource names, what the authority may say about a
// token (issued, rejected, halted) and what the resource side remembers of
// the authority. It links nothing heavy, so the policy loader, the guard
// and the fault-run checker use it without an etcd client; the authority
// that issues tokens is package authority.
package tokens
