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

// TestProxyPartition: held one way, a proxy passes the other way's bytes
// and keeps the held ones, in order, until the partition heals; cut, the
// connections it carried break and new ones still work.
func TestProxyPartition(t *testing.T) {
	// server answers every byte with its successor, and counts what it got
	got := make(chan byte, 16)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				for {
					if _, err := c.Read(b); err != nil {
						return
					}
					got <- b[0]
					if _, err := c.Write([]byte{b[0] + 1}); err != nil {
						return
					}
				}
			}()
		}
	}()
	p, err := startProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Answers lost: the request arrives, its answer does not, until the heal.
	p.holdDirections(toClient)
	if _, err := c.Write([]byte{1, 3}); err != nil {
		t.Fatal(err)
	}
	if a, b := <-got, <-got; a != 1 || b != 3 {
		t.Fatalf("the server got %d, %d, want 1, 3", a, b)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 2)); err == nil {
		t.Fatalf("read %d bytes of answers while they were held", n)
	}
	_ = c.SetReadDeadline(time.Time{})
	p.release()
	answers := make([]byte, 2)
	if _, err := io.ReadFull(c, answers); err != nil || answers[0] != 2 || answers[1] != 4 {
		t.Fatalf("after the heal: %v %v, want the held answers 2, 4", answers, err)
	}

	// Requests lost, then the partition cut: nothing arrived, the
	// connection is broken, and a new one goes through.
	p.holdDirections(toServer)
	if _, err := c.Write([]byte{5}); err != nil {
		t.Fatal(err)
	}
	p.drop()
	if _, err := io.ReadFull(c, make([]byte, 1)); err == nil {
		t.Fatal("a cut connection still answers")
	}
	// Held, then dropped with the connection: it can never arrive now.
	select {
	case b := <-got:
		t.Fatalf("the server got %d through a partition", b)
	default:
	}
	c2, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	if b := make([]byte, 1); func() error { _, err := io.ReadFull(c2, b); return err }() != nil || b[0] != 8 {
		t.Fatalf("a new connection after the cut: %v", b)
	}
}
