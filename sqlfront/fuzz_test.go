package sqlfront

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzStartupPacket feeds arbitrary bytes to the startup phase's reader:
// it never panics nor reads past a packet, and every refusal is an
// answer the front can send (an *sqlError).
func FuzzStartupPacket(f *testing.F) {
	f.Add(startupBytes(196608, "user\x00billing\x00database\x00app\x00\x00"))
	f.Add(startupBytes(196610, "user\x00billing\x00_pq_.x\x00on\x00\x00"))
	f.Add(startupBytes(80877103, ""))
	f.Add(startupBytes(80877102, "\x00\x00\x00\x01\x00\x00\x00\x02"))
	f.Add(startupBytes(2<<16, "user\x00x\x00\x00"))
	f.Add([]byte{0, 0, 0, 4})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		p, err := readStartupPacket(r)
		if err != nil {
			var se *sqlError
			if !errors.As(err, &se) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("a refusal the front cannot answer: %v", err)
			}
			return
		}
		if n := int(binary.BigEndian.Uint32(data)); len(data)-r.Len() != n {
			t.Fatalf("read %d bytes of a packet of %d", len(data)-r.Len(), n)
		}
		if p.params != nil && p.params["user"] == "" {
			t.Fatal("a StartupMessage without a user accepted")
		}
	})
}

func startupBytes(code uint32, params string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(params)))
	return append(binary.BigEndian.AppendUint32(b, code), params...)
}

// FuzzClientMessages feeds arbitrary bytes, after the startup, to the
// front's reading of a client's messages: its framing under its size
// limit, pgproto3's decoding of each frame, then what the front reads of
// each (the statements
// of a Query or Parse, what it makes of them, a Bind's parameters). It
// never panics; statements lie in order within their text; a statement
// is answered by the front only if it names fences exactly so; a frame
// aheadBuffered calls whole in the buffer is read without running out.
func FuzzClientMessages(f *testing.F) {
	var seed []byte
	for _, m := range []pgproto3.FrontendMessage{
		&pgproto3.Query{String: "BEGIN; SET LOCAL fencegw.tokens = 'account/acct-1=1:7'; UPDATE t SET x = 1"},
		&pgproto3.Parse{Name: "s", Query: "SELECT set_config('fencegw.tokens', $1, true)"},
		&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("account/acct-1=1:7")}},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Query{String: "COPY t FROM STDIN; SELECT $$;$$; /* ; */ SELECT E'\\'';"},
	} {
		seed, _ = m.Encode(seed)
	}
	f.Add(seed)
	f.Add([]byte{'Q', 0, 0, 0, 4})
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bufio.NewReader(bytes.NewReader(data))
		for range 64 {
			whole := aheadBuffered(in) // the loop then waits on the reader for it
			fr, err := readFrame(in, 1<<16)
			if whole && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
				t.Fatalf("a frame said whole in the buffer was cut short: %v", err)
			}
			if err != nil {
				var se *sqlError
				if !errors.As(err, &se) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("a frame refused with no answer: %v", err)
				}
				return
			}
			if fr.typ != fr.raw[0] || len(fr.raw) != 1+int(binary.BigEndian.Uint32(fr.raw[1:5])) {
				t.Fatalf("frame %q of %d bytes", fr.typ, len(fr.raw))
			}
			msg, err := decodeClient(fr)
			if err != nil {
				if _, ok := err.(*sqlError); !ok {
					t.Fatalf("a message refused with no answer: %v", err)
				}
				return
			}
			switch m := msg.(type) {
			case *pgproto3.Query:
				checkStatements(t, m.String)
			case *pgproto3.Parse:
				checkStatements(t, m.Query)
			case *pgproto3.Bind:
				for _, p := range m.Parameters {
					_, _ = parseTokenList(string(p))
				}
			}
		}
	})
}

func checkStatements(t *testing.T, sql string) {
	end := 0
	for _, st := range splitStatements(sql, true) {
		if st.start < end || st.end < st.start || st.end > len(sql) {
			t.Fatalf("statement [%d, %d) after %d in %d bytes", st.start, st.end, end, len(sql))
		}
		end = st.end
		v := classify(st)
		if v.kind == stTokens && !strings.Contains(strings.ToLower(sql[st.start:st.end]), "fencegw") {
			t.Fatalf("%q answered as naming fences", sql[st.start:st.end])
		}
	}
	_ = splitStatements(sql, false)
}

// FuzzTokenList: parseTokenList never panics; what it accepts names
// valid resources, each once, each with a token.
func FuzzTokenList(f *testing.F) {
	f.Add("account/acct-1=1:7:AAAAAAAAAAAAAAAAAAAAAQ, account/acct-2=1:9")
	f.Add(" a=b=1:2 ,c=1:3#2")
	f.Add("a=1:2,a=1:3")
	f.Add(",,,=")
	f.Fuzz(func(t *testing.T, text string) {
		named, err := parseTokenList(text)
		if err != nil {
			if err.Code != codeBadTokens {
				t.Fatalf("refused with %s", err.Code)
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range named {
			if tokens.CheckResource(n.resource) != nil || seen[n.resource] || n.token.IsZero() {
				t.Fatalf("accepted %+v", n)
			}
			seen[n.resource] = true
		}
	})
}
