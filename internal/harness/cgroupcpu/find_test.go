package cgroupcpu

import (
	"testing"
)

// A machine with both hierarchies, as Docker on cgroup v1 mounts them,
// and one with v2 alone, its cgroup namespace rooted below the mount.
const (
	mountsV1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:7 - cgroup2 cgroup2 rw
`
	cgroupsV1 = `4:memory:/process_api/4d53
1:cpu:/ci/job7
0::/
`
	mountsV2  = "29 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	cgroupsV2 = "0::/kubepods/pod1/c2\n"
)

func TestFindHierarchy(t *testing.T) {
	for _, tt := range []struct {
		name            string
		mounts, cgroups string
		want            hierarchy
		err             bool
	}{
		{"v1 cpu preferred", mountsV1, cgroupsV1, hierarchy{dir: "/sys/fs/cgroup/cpu/ci/job7"}, false},
		{"v2 under its namespace's root", mountsV2, cgroupsV2, hierarchy{dir: "/sys/fs/cgroup/c2", v2: true}, false},
		{"v2 mount, v1 cgroup lines only", mountsV2, "1:cpu:/x\n", hierarchy{}, true},
		{"no cpu controller", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", cgroupsV1, hierarchy{}, true},
		{"malformed mountinfo", "31 23 0:28 /\n", cgroupsV1, hierarchy{}, true},
		{"malformed cgroup line", mountsV1, "1:cpu\n", hierarchy{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findHierarchy([]byte(tt.mounts), []byte(tt.cgroups))
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("findHierarchy = %+v, %v; want %+v, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestParseThrottled(t *testing.T) {
	for _, tt := range []struct {
		stat string
		want int64
		err  bool
	}{
		{"nr_periods 12\nnr_throttled 7\nthrottled_time 81000\n", 7, false},
		{"usage_usec 5\nnr_periods 3\nnr_throttled 0\nthrottled_usec 0\n", 0, false},
		{"nr_periods 3\n", 0, true},
		{"nr_throttled -1\n", 0, true},
		{"nr_throttled x\n", 0, true},
	} {
		got, err := parseThrottled([]byte(tt.stat))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseThrottled(%q) = %d, %v; want %d, error %v", tt.stat, got, err, tt.want, tt.err)
		}
	}
}

// FuzzParse: the parsers of /proc and cgroup files never panic, and what
// findHierarchy returns is a directory or an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(mountsV1), []byte(cgroupsV1))
	f.Add([]byte(mountsV2), []byte(cgroupsV2))
	f.Add([]byte("1 2 3 4 5 - cgroup x cpu,cpuacct\n"), []byte("0::\n:cpu:/a\n"))
	f.Fuzz(func(t *testing.T, mounts, cgroups []byte) {
		h, err := findHierarchy(mounts, cgroups)
		if err == nil && h.dir == "" {
			t.Fatalf("findHierarchy(%q, %q) found no directory and no error", mounts, cgroups)
		}
		if n, err := parseThrottled(cgroups); err == nil && n < 0 {
			t.Fatalf("parseThrottled(%q) = %d", cgroups, n)
		}
	})
}
