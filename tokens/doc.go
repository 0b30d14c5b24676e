// Package tokens defines fencing tokens and the authority that issues them:
// an etcd cluster whose lock-key create revisions are the tokens.
package tokens
