// Package cgroupcpu throttles processes with the kernel's CPU bandwidth
// control: a cgroup of their own, made under this process's cgroup in the
// cpu hierarchy (cgroup v1's cpu controller, cpu.cfs_quota_us, or cgroup
// v2's cpu.max), lets them run quota of CPU time per period and stalls
// them for the rest — the "cgroup throttling" pause of a container at its
// CPU limit, replayed by the scheduler itself. Where the machine does not
// let this process make such a group (no cpu controller mounted, a
// read-only hierarchy, v2 without the controller delegated), New says
// why. It imports nothing of fencegw.
package cgroupcpu
