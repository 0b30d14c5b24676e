package torture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxOverrun bounds how far past Duration a run waits for its minimum
// failovers and rollbacks.
const MaxOverrun = 4

func startWorkers(bin, dir string, cfg Config, urls []string, dbURL string, until time.Time, stopFile string) ([]*exec.Cmd, error) {
	var cmds []*exec.Cmd
	for i := range cfg.Workers {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			return cmds, err
		}
		cmd := exec.Command(bin, "torture-worker", "--gateways", strings.Join(urls, ","),
			"--resources", strconv.Itoa(cfg.Resources), "--ttl", cfg.TTL.String(),
			"--until", until.Format(time.RFC3339Nano), "--stop-file", stopFile, "--history", historyPath(dir, i),
			"--worker", strconv.Itoa(i), "--seed", strconv.FormatInt(cfg.Seed, 10), "--burst", strconv.Itoa(cfg.Burst), "--database-url", dbURL,
			"--transfers", strconv.Itoa(cfg.Transfers), "--strict", strconv.Itoa(cfg.Strict), "--semaphores", strconv.Itoa(cfg.Semaphores))
		if cfg.ClockFaults {
			cmd.Args = append(cmd.Args, "--clock", clockPath(dir, i))
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			out.Close()
			return cmds, err
		}
		out.Close() // the child has its own descriptor
		cmds = append(cmds, cmd)
	}
	return cmds, nil
}

func historyPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("history-%d.jsonl", i))
}

// waitWorkers waits for the workers to pass their deadline and exit, and
// kills those that do not within grace.
func waitWorkers(cmds []*exec.Cmd, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		for _, c := range cmds {
			_ = c.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		<-done
	}
}

func clockPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("clock-%d.page", i))
}

// clockPages makes the workers' clock pages, before they start, so that
// the nemesis and each worker map one file.
func clockPages(dir string, workers int) ([]*clockPage, error) {
	var pages []*clockPage
	for i := range workers {
		p, err := mapClockPage(clockPath(dir, i))
		if err != nil {
			for _, p := range pages {
				p.close()
			}
			return nil, err
		}
		pages = append(pages, p)
	}
	return pages, nil
}
