package httpauth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Loopback reports whether a listen address binds loopback only: its host
// is in 127.0.0.0/8, ::1 or localhost. An empty host (":8080") binds every
// interface.
func Loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CheckExposure refuses to serve a non-loopback listen address without a
// credential, unless insecure: anyone who reaches it could act on the
// fleet. flag names the listen flag, such as "--http".
func CheckExposure(flag, listen string, protected, insecure bool) error {
	if protected || insecure || Loopback(listen) {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address and no credential is set, so anyone who reaches it could send, approve and run tools: "+
		"give a writer token with --http-token-file FILE (or $AGENTFLEET_HTTP_TOKEN_FILE) and, for read-only access, --http-viewer-token-file FILE "+
		"(or $AGENTFLEET_HTTP_VIEWER_TOKEN_FILE); or listen on 127.0.0.1; or, behind something else that authenticates, accept it with --insecure-http", flag, listen)
}
