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

func startWorkers(bin, dir string, cfg Config, urls []string, dbURL string, until time.Time, stopFile string, front *wire, fronts []string) ([]*exec.Cmd, error) {
	var cmds []*exec.Cmd
	for i := range cfg.workerProcs() {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if err != nil {
			return cmds, err
		}
		cmd := exec.Command(bin, "torture-worker", "--gateways", strings.Join(urls, ","),
			"--resources", strconv.Itoa(cfg.Resources), "--ttl", cfg.TTL.String(),
			"--until", until.Format(time.RFC3339Nano), "--stop-file", stopFile, "--history", historyPath(dir, i),
			"--worker", strconv.Itoa(i), "--seed", strconv.FormatInt(cfg.Seed, 10), "--burst", strconv.Itoa(cfg.Burst), "--database-url", dbURL,
			"--transfers", strconv.Itoa(cfg.Transfers), "--strict", strconv.Itoa(cfg.Strict), "--semaphores", strconv.Itoa(cfg.Semaphores))
		if cfg.workerPages() {
			cmd.Args = append(cmd.Args, "--clock", clockPath(dir, "clock", i))
		}
		if i >= cfg.Workers {
			cmd.Args = append(cmd.Args, "--churn", strconv.Itoa(cfg.ChurnResources), "--grants", grantsPath(dir, i))
		}
		if front != nil {
			cmd.Args = append(cmd.Args, "--wire", strconv.Itoa(cfg.Wire), "--fronts", strings.Join(fronts, ","), "--front-db", front.db,
				"--bearer-file", front.keyFile)
			if cfg.UnsafeNoFence {
				cmd.Args = append(cmd.Args, "--unfenced")
			}
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

// clockPath is the clock page of worker i (name "clock") or gateway i
// ("gateway-clock").
func clockPath(dir, name string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%d.page", name, i))
}

// mapClockPages makes n clock pages of the name, before the processes
// that read them start, so that the nemesis and each process map one
// file.
func mapClockPages(dir, name string, n int) ([]*clockPage, error) {
	var pages []*clockPage
	for i := range n {
		p, err := mapClockPage(clockPath(dir, name, i))
		if err != nil {
			closePages(pages)
			return nil, err
		}
		pages = append(pages, p)
	}
	return pages, nil
}

func closePages(pages []*clockPage) {
	for _, p := range pages {
		p.close()
	}
}
