package httpauth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Hosts is the allow-list of the Host header: names a request may address
// the listener by. A Host that is an IP address is always allowed: DNS
// rebinding needs a name (the attacker's, resolved to this listener's
// address), and a browser that connects to an address sends that address,
// so the probes of a kubelet (Host: <pod IP>:<port>) and a scraper need no
// entry. A name must be in the list: with or without a port, an entry
// without one matching any port.
type Hosts struct {
	names []string // lower case, without a trailing dot: "host" or "host:port"
	any   bool
}

// loopbackNames are always allowed.
var loopbackNames = []string{"localhost"}

// NewHosts returns the allow-list of a listener on listen: the loopback
// names, the host of listen when it is a name (not an IP address, nor
// empty), and extra (entries of --http-allowed-hosts). An entry "*"
// allows every name and turns the check off.
func NewHosts(listen string, extra []string) (Hosts, error) {
	var h Hosts
	h.names = append(h.names, loopbackNames...)
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			h.names = append(h.names, normalHost(host))
		}
	}
	for _, e := range extra {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == "*":
			h.any = true
			continue
		case strings.ContainsAny(e, "/ \t@?#"):
			return Hosts{}, fmt.Errorf("allowed host %q: want a name with an optional port, such as dash.example.com or dash.example.com:8080", e)
		}
		h.names = append(h.names, normalHost(e))
	}
	return h, nil
}

// ParseList splits a comma-separated flag value.
func ParseList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Names returns the names allowed, for messages.
func (h Hosts) Names() []string { return append([]string(nil), h.names...) }

// Allows reports whether a request's Host may be served.
func (h Hosts) Allows(hostport string) bool {
	if hostport == "" {
		return false
	}
	if h.any {
		return true
	}
	name, port := splitHost(hostport)
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	name = normalHost(name)
	for _, e := range h.names {
		en, ep := splitHost(e)
		if en == name && (ep == "" || ep == port) {
			return true
		}
	}
	return false
}

// splitHost splits "name[:port]" or "[v6][:port]" into name and port.
func splitHost(hostport string) (name, port string) {
	if host, p, err := net.SplitHostPort(hostport); err == nil {
		return host, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
}

// normalHost lower-cases a name and drops a trailing dot.
func normalHost(s string) string {
	s = strings.ToLower(s)
	if name, port := splitHost(s); port != "" {
		return strings.TrimSuffix(name, ".") + ":" + port
	}
	return strings.TrimSuffix(s, ".")
}
