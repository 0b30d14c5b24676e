package sqlfront

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/internal/clip"
)

// The startup phase: before a session's first message a client sends
// packets without a type byte, a length and a code. The front reads them
// itself, not with pgproto3, so that it can answer each malformed or
// unsupported one with the error PostgreSQL would send, and so that no
// byte beyond a packet is read before TLS begins (bytes sent ahead of a
// TLS handshake must not count as sent under it).

const (
	maxStartupPacket  = 10000 // PostgreSQL's MAX_STARTUP_PACKET_LENGTH
	codeSSLRequest    = 80877103
	codeGSSENCRequest = 80877104
	codeCancelRequest = 80877102
	protocolMajor     = 3
)

// startupPacket is one packet of the startup phase.
type startupPacket struct {
	code uint32 // a protocol version (major << 16 | minor) or a request's code
	// A StartupMessage's parameters, and the _pq_. options among them,
	// which the front does not know.
	params  map[string]string
	options []string
	cancel  pgproto3.CancelRequest // a CancelRequest's
}

func (p startupPacket) minor() uint32 { return p.code & 0xffff }

// readStartupPacket reads one packet of the startup phase from r, and
// nothing past it.
func readStartupPacket(r io.Reader) (startupPacket, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return startupPacket{}, err
	}
	n := int64(int32(binary.BigEndian.Uint32(head[:])))
	if n < 8 || n > maxStartupPacket {
		return startupPacket{}, fatal(codeProtocol, fmt.Sprintf("invalid length of startup packet: %d", n))
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return startupPacket{}, err
	}
	return decodeStartupPacket(body)
}

// decodeStartupPacket reads a packet's body, after its length.
func decodeStartupPacket(body []byte) (startupPacket, error) {
	if len(body) < 4 {
		return startupPacket{}, fatal(codeProtocol, "startup packet too short")
	}
	p := startupPacket{code: binary.BigEndian.Uint32(body)}
	rest := body[4:]
	switch p.code {
	case codeSSLRequest, codeGSSENCRequest:
		if len(rest) != 0 {
			return p, fatal(codeProtocol, "invalid length of SSL or GSSAPI request")
		}
		return p, nil
	case codeCancelRequest:
		if len(rest) != 8 { // protocol 3.0's four-byte key, the only one the front gives
			return p, fatal(codeProtocol, "invalid length of cancel request")
		}
		p.cancel = pgproto3.CancelRequest{ProcessID: binary.BigEndian.Uint32(rest), SecretKey: append([]byte(nil), rest[4:]...)}
		return p, nil
	}
	if major := p.code >> 16; major != protocolMajor {
		return p, fatal(codeUnsupported, fmt.Sprintf("unsupported frontend protocol %d.%d: the SQL front speaks 3.0", major, p.minor()))
	}
	params, err := decodeParams(rest)
	if err != nil {
		return p, err
	}
	p.params = params
	for k := range params {
		if strings.HasPrefix(k, "_pq_.") {
			p.options = append(p.options, k)
			delete(params, k)
		}
	}
	if params["user"] == "" {
		return p, fatal(codeAuth, "no user name specified in the startup packet")
	}
	return p, nil
}

// decodeParams reads a StartupMessage's name-value pairs: zero-terminated
// strings, the list ended by an empty name. A name given twice, or bytes
// past the list's end, are refused.
func decodeParams(b []byte) (map[string]string, error) {
	params := map[string]string{}
	for {
		name, rest, ok := cutZero(b)
		if !ok {
			return nil, fatal(codeProtocol, "invalid startup packet layout: expected terminator as last byte")
		}
		if name == "" {
			if len(rest) != 0 {
				return nil, fatal(codeProtocol, "invalid startup packet layout: bytes after the terminator")
			}
			return params, nil
		}
		value, rest2, ok := cutZero(rest)
		if !ok {
			return nil, fatal(codeProtocol, fmt.Sprintf("invalid startup packet layout: no value for %q", clipName(name)))
		}
		if _, dup := params[name]; dup {
			return nil, fatal(codeProtocol, fmt.Sprintf("startup parameter %q given twice", clipName(name)))
		}
		params[name] = value
		b = rest2
	}
}

// cutZero splits b at its first zero byte.
func cutZero(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return "", nil, false
}

func clipName(s string) string { return clip.String(s, 64) }
