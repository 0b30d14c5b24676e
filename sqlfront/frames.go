package sqlfront

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"
)

// After the startup, every message either way is a frame: a type byte,
// a length that counts itself, a body. The front reads frames whole and
// decodes only what it reads (a client's statements, PostgreSQL's
// completions, errors and settings); everything else it passes on as the
// bytes that came, which costs a copy and no decoding. A frame owns its
// bytes, so a reader can read ahead of the loop that handles them.

// frame is one message: raw is the whole of it, header included.
type frame struct {
	typ byte
	raw []byte
}

// body is the frame after its header.
func (f frame) body() []byte { return f.raw[5:] }

// readFrame reads one frame from r; a frame whose body is longer than
// maxBody is refused (54000) unread.
func readFrame(r *bufio.Reader, maxBody int) (frame, error) {
	head, err := r.Peek(5)
	if err != nil {
		return frame{}, eofAsUnexpected(err, len(head))
	}
	n := int64(int32(binary.BigEndian.Uint32(head[1:])))
	switch {
	case n < 4:
		return frame{}, fatal(codeProtocol, fmt.Sprintf("invalid message length %d", n))
	case n-4 > int64(maxBody):
		return frame{}, fatal(codeTooLarge, fmt.Sprintf("message of %d bytes: the SQL front takes at most %d", n-4, maxBody))
	}
	f := frame{typ: head[0], raw: make([]byte, 1+n)}
	if _, err := io.ReadFull(r, f.raw); err != nil {
		return frame{}, eofAsUnexpected(err, 1)
	}
	return f, nil
}

// aheadBuffered reports whether r holds the next frame whole: reading it
// waits on nobody. Only a whole frame counts; a part of one may wait on
// its sender for the rest, for as long as the sender likes.
func aheadBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 5 {
		return false
	}
	head, err := r.Peek(5)
	if err != nil {
		return false
	}
	n := int64(int32(binary.BigEndian.Uint32(head[1:])))
	return n >= 4 && int64(r.Buffered()) >= 1+n
}

// eofAsUnexpected: an end inside a frame is not a clean end.
func eofAsUnexpected(err error, read int) error {
	if err == io.EOF && read > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// encoded is m as a frame.
func encoded(m interface{ Encode([]byte) ([]byte, error) }) frame {
	b, err := m.Encode(nil)
	if err != nil {
		panic(fmt.Sprintf("sqlfront: encode %T: %v", m, err)) // the front's own messages are well-formed
	}
	return frame{typ: b[0], raw: b}
}

// decodeClient decodes a client's frame into the message it is, a
// message of its own that keeps the frame's bytes alive.
func decodeClient(f frame) (pgproto3.FrontendMessage, error) {
	var m interface {
		pgproto3.FrontendMessage
		Decode([]byte) error
	}
	switch f.typ {
	case 'Q':
		m = &pgproto3.Query{}
	case 'P':
		m = &pgproto3.Parse{}
	case 'B':
		m = &pgproto3.Bind{}
	case 'D':
		m = &pgproto3.Describe{}
	case 'E':
		m = &pgproto3.Execute{}
	case 'C':
		m = &pgproto3.Close{}
	case 'S':
		m = &pgproto3.Sync{}
	case 'H':
		m = &pgproto3.Flush{}
	case 'X':
		m = &pgproto3.Terminate{}
	case 'F':
		m = &pgproto3.FunctionCall{}
	case 'd':
		m = &pgproto3.CopyData{}
	case 'c':
		m = &pgproto3.CopyDone{}
	case 'f':
		m = &pgproto3.CopyFail{}
	default:
		return nil, fatal(codeProtocol, fmt.Sprintf("invalid frontend message type %d", f.typ))
	}
	if err := m.Decode(f.body()); err != nil {
		return nil, fatal(codeProtocol, "invalid message from the client: "+err.Error())
	}
	return m, nil
}
