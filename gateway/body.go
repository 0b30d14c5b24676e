package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
)

// initialBodyBuffer is what a request may make the gateway allocate before
// its body arrives: the body's declared length up to this, then growth as
// the bytes come. A client that announces 64 KiB and sends one byte costs
// this much, not 64 KiB. Real writes are smaller.
const initialBodyBuffer = 512

// preread is a body the gate read before it admitted the request.
type preread struct {
	bytes []byte
	off   int // what Read has returned of it
}

func (p *preread) Read(b []byte) (int, error) {
	if p.off == len(p.bytes) {
		return 0, io.EOF
	}
	n := copy(b, p.bytes[p.off:])
	p.off += n
	return n, nil
}

func (p *preread) Close() error { return nil }

// readBodyWithin reads r's body, which must arrive within the gateway's
// body timeout: a client that trickles or withholds its body holds only its
// own connection, never a turn at the gate or a lease request for long.
// The deadline is lifted afterwards, so that net/http's background reader
// (watching for the client to go away) does not trip on it while the
// request waits for its turn.
func (g *Gateway) readBodyWithin(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == http.NoBody || r.Body == nil {
		return nil, nil
	}
	// Not supported only by a ResponseWriter that hides the connection (a
	// test's recorder): then the server's read timeout is the only bound.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.bodyTTL))
	body, err := g.readBody(r)
	if err != nil {
		// The rest of the body is not worth waiting for: net/http would
		// read it, to keep the connection, once the refusal is sent.
		w.Header().Set("Connection", "close")
		return nil, err
	}
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = &preread{bytes: body}
	return body, nil
}

// identityOnly refuses a body sent with a content coding. The gateway
// decodes none, and reading such a body as it is would be wrong either
// way: compressed bytes are not JSON, and plain JSON labelled gzip is not
// what its client said it sent. Codings are case-insensitive (RFC 9110
// §8.4.1); empty elements of the list are ignored (§5.6.1).
func identityOnly(h http.Header) error {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return fmt.Errorf("%w: Content-Encoding %q: only identity is accepted; send the body uncompressed",
					ErrContentEncoding, clip.String(v, 64))
			}
		}
	}
	return nil
}

// readBody reads at most maxBody bytes of r's body, in one allocation when
// the client sent a small Content-Length (every HTTP client does for a
// small body); io.ReadAll would grow its buffer from 512 bytes. A body the
// gate read already is returned as it is.
func (g *Gateway) readBody(r *http.Request) ([]byte, error) {
	if p, ok := r.Body.(*preread); ok {
		return p.bytes, nil
	}
	if err := identityOnly(r.Header); err != nil {
		return nil, err
	}
	tooLarge := func() error { return fmt.Errorf("%w: at most %d bytes", ErrBodyTooLarge, g.maxBody) }
	if r.ContentLength > g.maxBody {
		return nil, tooLarge()
	}
	size := initialBodyBuffer
	if r.ContentLength >= 0 {
		// + 1: room to see the end without growing. Capped: the length
		// is the client's word, and the bytes may never come.
		size = int(min(r.ContentLength+1, initialBodyBuffer))
	}
	body := make([]byte, 0, size)
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := r.Body.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if int64(len(body)) > g.maxBody {
			return nil, tooLarge()
		}
		switch {
		case err == io.EOF:
			return body, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, badRequest("the body did not arrive within %s", g.bodyTTL)
		case err != nil:
			// Not the error's text: it names this host's and the client's
			// addresses.
			return nil, badRequest("reading the body failed after %d bytes: the connection broke or the body was cut short", len(body))
		}
	}
}
