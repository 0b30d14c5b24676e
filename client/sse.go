package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxSSELine bounds one line of a watch stream: an event's data is a
// lock value (at most 4 KiB, escaped as JSON) and a few fields.
const maxSSELine = 64 << 10

// sseMessage is one Server-Sent Event, as far as a watch uses them.
type sseMessage struct {
	ID    string // "" when the event set none
	Event string
	Data  string
}

// sseReader reads Server-Sent Events (the WHATWG event-stream format):
// lines of "field: value", comments starting with ':', an empty line
// ending each event; CR, LF and CRLF all end a line.
type sseReader struct {
	sc *bufio.Scanner
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxSSELine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc}
}

// errSSELine ends a stream with a line longer than maxSSELine.
var errSSELine = errors.New("client: watch stream: a line too long")

// next returns the next event that carries data or an id (an id alone
// moves the last event ID on, and dispatches nothing); io.EOF at the end
// of the stream (an event cut off by it is dropped, as the format says).
func (r *sseReader) next() (sseMessage, error) {
	var m sseMessage
	var data []string
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if data == nil && m.ID == "" {
				m = sseMessage{}
				continue
			}
			m.Data = strings.Join(data, "\n")
			return m, nil
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: a heartbeat
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.ContainsRune(value, 0) {
				m.ID = value
			}
		case "event":
			m.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := r.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		// No event of the gateway's is that long: the stream is not its,
		// and a resumed one would meet the line again.
		return sseMessage{}, fmt.Errorf("%w: %w: more than %d bytes", ErrUnexpectedResponse, errSSELine, maxSSELine)
	} else if err != nil {
		return sseMessage{}, err
	}
	return sseMessage{}, io.EOF
}

// scanSSELines splits at CRLF, LF or CR.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	for i, b := range data {
		switch b {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 == len(data) && !atEOF {
				return 0, nil, nil // a CRLF split across reads: wait for the LF
			}
			if i+1 < len(data) && data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
