package cgroupcpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// hierarchy is where this process's cpu cgroup is: the directory of its
// cgroup and whether it is cgroup v2.
type hierarchy struct {
	dir string
	v2  bool
}

// errNoController: no cpu controller is mounted for this process.
var errNoController = errors.New("cgroupcpu: no cgroup cpu controller is mounted (neither v1's cpu nor v2's)")

// findHierarchy reads this process's mounts and cgroups (the contents of
// /proc/self/mountinfo and /proc/self/cgroup) for its cpu cgroup,
// preferring v1's cpu controller, which needs no delegation.
func findHierarchy(mountinfo, cgroups []byte) (hierarchy, error) {
	v1, v2, err := parseMounts(mountinfo)
	if err != nil {
		return hierarchy{}, err
	}
	paths, err := parseCgroups(cgroups)
	if err != nil {
		return hierarchy{}, err
	}
	if v1.point != "" {
		if p, ok := paths["cpu"]; ok {
			return hierarchy{dir: under(v1, p)}, nil
		}
	}
	if v2.point != "" {
		if p, ok := paths[""]; ok {
			return hierarchy{dir: under(v2, p), v2: true}, nil
		}
	}
	return hierarchy{}, errNoController
}

// mount is a cgroup mount: where it is, and which cgroup is its root.
type mount struct{ point, root string }

// under is the directory of cgroup path (as /proc/self/cgroup names it)
// in m.
func under(m mount, path string) string {
	rel, ok := strings.CutPrefix(path, m.root)
	if !ok {
		rel = path
	}
	return filepath.Join(m.point, rel)
}

// parseMounts finds the v1 mount carrying the cpu controller and the v2
// mount in mountinfo's lines: "ID PARENT MAJ:MIN ROOT POINT OPTS
// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
func parseMounts(mountinfo []byte) (v1, v2 mount, err error) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 {
			return mount{}, mount{}, fmt.Errorf("cgroupcpu: mountinfo line %d: malformed", n)
		}
		m := mount{root: f[3], point: f[4]}
		switch f[sep+1] {
		case "cgroup2":
			v2 = m
		case "cgroup":
			if slices.Contains(strings.Split(f[sep+3], ","), "cpu") {
				v1 = m
			}
		}
	}
	return v1, v2, sc.Err()
}

// parseCgroups reads /proc/self/cgroup's "ID:CONTROLLERS:PATH" lines into
// the path of each controller; v2's line (ID 0, no controllers) is "".
func parseCgroups(cgroups []byte) (map[string]string, error) {
	paths := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(cgroups))
	for n := 1; sc.Scan(); n++ {
		if sc.Text() == "" {
			continue
		}
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			return nil, fmt.Errorf("cgroupcpu: cgroup line %d: malformed", n)
		}
		if f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	return paths, sc.Err()
}
