package conformance_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// lineTimeout bounds the wait for the runner's next line. A scenario's
// own waits are bounded at 30 s (scenarios.json); a runner silent for
// longer is stuck.
const lineTimeout = 2 * time.Minute

// message is a line of the runner: start, ready or result.
type message struct {
	Event    string         `json:"event"`
	Scenario string         `json:"scenario"`
	Step     string         `json:"step"`
	Data     map[string]any `json:"data"`
	Observed map[string]any `json:"observed"`
	Error    string         `json:"error"`
}

// runnerProc is a runner's process and its lines.
type runnerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan lineOrErr
	stderr *syncBuffer
	exited chan error
}

type lineOrErr struct {
	msg message
	err error // io.EOF at the end of stdout
}

// startRunner starts argv as a process of its own (no shell: its pid is
// the runner's, for SIGSTOP) in dir.
func startRunner(dir string, argv []string, env []string) (*runnerProc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &runnerProc{cmd: cmd, stdin: stdin, lines: make(chan lineOrErr, 16), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				p.lines <- lineOrErr{err: fmt.Errorf("a line that is not a JSON object: %q", sc.Text())}
				continue
			}
			p.lines <- lineOrErr{msg: m}
		}
		p.lines <- lineOrErr{err: io.EOF}
		p.exited <- cmd.Wait()
	}()
	return p, nil
}

// next returns the runner's next line.
func (p *runnerProc) next() (message, error) {
	select {
	case l := <-p.lines:
		return l.msg, l.err
	case <-time.After(lineTimeout):
		return message{}, fmt.Errorf("no line from the runner in %s", lineTimeout)
	}
}

// send writes one line to the runner.
func (p *runnerProc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// stop ends the runner: stdin closed, then killed if it does not exit.
func (p *runnerProc) stop() error {
	p.stdin.Close()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-p.lines: // drained, so that the reader reaches Wait
		case err := <-p.exited:
			return err
		case <-timeout:
			_ = p.cmd.Process.Kill()
			return errors.New("the runner did not exit once stdin was closed: killed")
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the runner's stderr writer and
// the test's reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// take returns what was written since the last take.
func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}
