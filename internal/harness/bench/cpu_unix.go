//go:build unix

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuUsed is the CPU time the gateway has used so far: the processes in
// pids (user and system, from /proc), or this whole process when
// inProcess.
func cpuUsed(pids []int, inProcess bool) (time.Duration, error) {
	if inProcess {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, err
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}
	if len(pids) == 0 {
		return 0, fmt.Errorf("bench: the gateway's process is unknown")
	}
	var total time.Duration
	for _, pid := range pids {
		d, err := processCPU(pid)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times: 100 on
// every architecture Go runs on.
const clockTick = 10 * time.Millisecond

// processCPU reads pid's user and system time from /proc/pid/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: the fields count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14 of the whole line
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: bad CPU times", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}
