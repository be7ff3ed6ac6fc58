package localcluster

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// A client the proxy refuses loses its open connection and gets no new
// one; once no longer refused, it connects again.
func TestTCPProxyRefusesAClient(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := startTCPProxy("127.0.0.1:0", backend.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	// echoes tells whether a connection carries a byte there and back.
	echoes := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte{'x'}); err != nil {
			return false
		}
		_, err := io.ReadFull(c, make([]byte, 1))
		return err == nil
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	open := dial()
	defer open.Close()
	if !echoes(open) {
		t.Fatal("no echo through the proxy")
	}
	loopback := netip.MustParseAddr("127.0.0.1")
	p.refuseClient(loopback, true)
	if echoes(open) {
		t.Error("the refused client's open connection still carries data")
	}
	refused := dial()
	defer refused.Close()
	if echoes(refused) {
		t.Error("the refused client got a new connection through")
	}
	p.refuseClient(loopback, false)
	again := dial()
	defer again.Close()
	if !echoes(again) {
		t.Error("no echo once the client is no longer refused")
	}
}
