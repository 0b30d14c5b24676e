package torture

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every connection with what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestSlowProxyKeepsBytesAndOrder: delayed or not, what goes through the
// proxy arrives whole and in order, both ways; closing the proxy breaks
// the connections it carries.
func TestSlowProxyKeepsBytesAndOrder(t *testing.T) {
	p, err := startProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for _, delay := range []time.Duration{0, time.Millisecond} {
		p.setDelay(delay)
		c, err := net.Dial("tcp", p.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sent := make([]byte, 256<<10)
		_, _ = rand.Read(sent)
		go func() {
			for b := sent; len(b) > 0; b = b[min(len(b), 1000):] { // many chunks
				if _, err := c.Write(b[:min(len(b), 1000)]); err != nil {
					return
				}
			}
		}()
		got := make([]byte, len(sent))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("delay %s: %v", delay, err)
		}
		if !bytes.Equal(got, sent) {
			t.Fatalf("delay %s: the bytes came back changed or out of order", delay)
		}
		c.Close()
	}

	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	p.close()
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes through a closed proxy", n)
	}
	if _, err := net.Dial("tcp", p.ln.Addr().String()); err == nil {
		t.Fatal("the closed proxy still accepts connections")
	}
}

func TestProxiedURL(t *testing.T) {
	p, err := startProxy("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	got, err := p.proxiedURL("postgres://postgres@127.0.0.1:5432/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://postgres@" + p.ln.Addr().String() + "/db?sslmode=disable"; got != want {
		t.Fatalf("proxiedURL = %s, want %s", got, want)
	}
}
