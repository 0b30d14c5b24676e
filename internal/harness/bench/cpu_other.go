//go:build !unix

package bench

import (
	"errors"
	"time"
)

// cpuUsed is not measured where there is no getrusage nor /proc.
func cpuUsed([]int, bool) (time.Duration, error) {
	return 0, errors.New("bench: CPU time is read on unix only")
}
