// Package etcdserver runs a single-member etcd inside this process, for
// `fencegw dev` and tests that need a real lock service.
package etcdserver
