package localcluster

// SIMULATION: a TCP forwarder, for the API server's address on the
// PostgreSQL bridge and for the Services on loopback. See
// simulation_postgres.go.

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// tcpDialTimeout bounds a connection to a backend: a namespace that is cut
// off drops packets rather than refusing them.
const tcpDialTimeout = 3 * time.Second

// tcpProxy forwards each connection it accepts to one of its backends,
// chosen at random, and closes it at once when it has none.
type tcpProxy struct {
	listener net.Listener
	wg       sync.WaitGroup

	mu       sync.Mutex
	backends []string
	conns    map[*proxiedConn]struct{}
	closed   bool
	// refused are the client addresses whose connections it closes at
	// once, as though the way to it were cut (refuseClient).
	refused map[netip.Addr]bool
}

type proxiedConn struct {
	backend        string
	client, server net.Conn
}

// startTCPProxy listens on addr (port 0 for a free one) and forwards to
// backends until close.
func startTCPProxy(addr string, backends ...string) (*tcpProxy, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{listener: l, backends: backends, conns: map[*proxiedConn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// addr is the address the proxy listens on.
func (p *tcpProxy) addr() string { return p.listener.Addr().String() }

// setBackends replaces the backends of new connections, and closes the
// connections to backends that are not in present (gone from the
// Service's endpoints), as kube-proxy's clean-up of connection tracking
// would.
func (p *tcpProxy) setBackends(ready []string, present map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = ready
	for c := range p.conns {
		if !present[c.backend] {
			c.client.Close()
			c.server.Close()
		}
	}
}

// refuseClient closes, when refuse, the connections from addr and those
// it opens from then on, until it is called again with refuse false.
func (p *tcpProxy) refuseClient(addr netip.Addr, refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !refuse {
		delete(p.refused, addr)
		return
	}
	if p.refused == nil {
		p.refused = map[netip.Addr]bool{}
	}
	p.refused[addr] = true
	for c := range p.conns {
		if clientAddr(c.client) == addr {
			c.client.Close()
			c.server.Close()
		}
	}
}

// clientAddr is the address a connection came from.
func clientAddr(c net.Conn) netip.Addr {
	addr, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return addr.Addr().Unmap()
}

// close stops listening, closes every connection and waits for the
// forwarding to end.
func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.client.Close()
		c.server.Close()
	}
	p.mu.Unlock()
	p.listener.Close()
	p.wg.Wait()
}

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(client)
		}()
	}
}

func (p *tcpProxy) forward(client net.Conn) {
	p.mu.Lock()
	backends, refused := p.backends, p.refused[clientAddr(client)]
	p.mu.Unlock()
	if len(backends) == 0 || refused {
		client.Close()
		return
	}
	backend := backends[rand.IntN(len(backends))]
	server, err := net.DialTimeout("tcp", backend, tcpDialTimeout)
	if err != nil {
		client.Close()
		return
	}
	c := &proxiedConn{backend: backend, client: client, server: server}
	p.mu.Lock()
	if p.closed || p.refused[clientAddr(client)] {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
