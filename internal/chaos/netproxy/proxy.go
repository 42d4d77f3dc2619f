package netproxy

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/proc"
)

// maxHeld bounds the bytes a direction of one connection reads ahead of
// what it delivered; past it the proxy stops reading, and TCP's own flow
// control holds the sender.
const maxHeld = 1 << 20

// Proxy accepts connections on a loopback port and carries each to its
// upstream address under the current Mode. It is safe for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	cond   *sync.Cond // signalled on every change of mode, queue or closing
	mode   Mode
	rng    *rand.Rand
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Listen starts a proxy on 127.0.0.1 (a free port) to upstream (host:port),
// passing bytes until Set says otherwise; seed chooses the jitter draws.
func Listen(upstream string, seed uint64) (*Proxy, error) {
	ln, err := proc.Listen() // never a port handed to a child to bind
	if err != nil {
		return nil, fmt.Errorf("netproxy: listen for %s: %w", upstream, err)
	}
	p := &Proxy{ln: ln, upstream: upstream, rng: rand.New(rand.NewPCG(seed, 0x6e6574)), conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// ListenAll starts a proxy to each of upstreams (host:port, or a URL such
// as nats://host:port) and returns them with their URLs, in the same
// scheme; on an error none is left running.
func ListenAll(upstreams []string, seed uint64) ([]*Proxy, []string, error) {
	var ps []*Proxy
	var urls []string
	for i, u := range upstreams {
		scheme, hostport, ok := strings.Cut(u, "://")
		if !ok {
			scheme, hostport = "", u
		}
		p, err := Listen(hostport, seed+uint64(i))
		if err != nil {
			for _, p := range ps {
				p.Close()
			}
			return nil, nil, err
		}
		ps = append(ps, p)
		if scheme != "" {
			urls = append(urls, scheme+"://"+p.Addr())
		} else {
			urls = append(urls, p.Addr())
		}
	}
	return ps, urls, nil
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set changes the mode of every connection, those open and those to come.
// Bytes held by a blackhole flow again (in order) once it is lifted; a
// latency applies to bytes read from then on.
func (p *Proxy) Set(m Mode) error {
	if err := m.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	p.mode = m
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		// The upstream is dialed at once, as a router would pass the SYN
		// on: a server that is down refuses the client now.
		up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
		if err != nil {
			down.Close()
			continue
		}
		if !p.track(down, up) {
			return
		}
		c := &link{p: p, a: down, b: up}
		p.wg.Add(4)
		ab, ba := &pipe{}, &pipe{}
		go c.read(down, ab)
		go c.write(up, ab)
		go c.read(up, ba)
		go c.write(down, ba)
	}
}

// track records a connection pair, or closes it when the proxy closed.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// link is one proxied connection: a (the client) and b (the upstream).
type link struct {
	p    *Proxy
	a, b net.Conn
	once sync.Once
	gone bool // shut: both directions stop (guarded by the proxy's mu)
}

// pipe is one direction of a link: the chunks read and not yet delivered.
type pipe struct {
	q       []chunk
	held    int
	prevDue time.Time
	done    bool // the writer gave up: reading stops
}

type chunk struct {
	data    []byte
	arrived time.Time
	delay   time.Duration
	eof     bool
}

// shut closes both sides of the link, once.
func (c *link) shut() {
	c.once.Do(func() {
		c.a.Close()
		c.b.Close()
		c.p.mu.Lock()
		c.gone = true
		delete(c.p.conns, c.a)
		delete(c.p.conns, c.b)
		c.p.cond.Broadcast()
		c.p.mu.Unlock()
	})
}

// read queues what src sends, stamped with its delay, and an end when src
// ends; it stops reading while too much is held.
func (c *link) read(src net.Conn, d *pipe) {
	defer c.p.wg.Done()
	p := c.p
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		if n > 0 {
			d.q = append(d.q, chunk{data: append([]byte(nil), buf[:n]...), arrived: time.Now(), delay: Delay(p.mode, p.rng.Float64())})
			d.held += n
		}
		if err != nil {
			d.q = append(d.q, chunk{arrived: time.Now(), eof: true})
		}
		p.cond.Broadcast()
		for d.held > maxHeld && !d.done && !p.closed && !c.gone {
			p.cond.Wait()
		}
		stop := err != nil || d.done || p.closed || c.gone
		p.mu.Unlock()
		if stop {
			return
		}
	}
}

// write delivers the chunks to dst when they are due and no blackhole
// holds them; an end (or a failed write) closes the link.
func (c *link) write(dst net.Conn, d *pipe) {
	defer c.p.wg.Done()
	defer c.shut()
	p := c.p
	for {
		p.mu.Lock()
		for (len(d.q) == 0 || p.mode.Blackhole) && !p.closed && !c.gone {
			p.cond.Wait()
		}
		if p.closed || c.gone {
			d.done = true
			p.mu.Unlock()
			return
		}
		ch := d.q[0]
		due := Due(ch.arrived, ch.delay, d.prevDue)
		if wait := time.Until(due); wait > 0 {
			p.mu.Unlock()
			// The proxy's job is to delay: this is the link's latency.
			time.Sleep(wait)
			continue // a blackhole may have begun meanwhile
		}
		d.q = d.q[1:]
		d.held -= len(ch.data)
		d.prevDue = due
		p.cond.Broadcast()
		p.mu.Unlock()
		if ch.eof {
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			p.mu.Lock()
			d.done = true
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
	}
}
