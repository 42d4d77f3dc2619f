package mcpbridge

import "sync"

// Claims keeps apart the tools of the MCP servers of one worker: a tool
// name served by one server's bridge is not served by another's, since
// the same subject in the same queue group would split its calls between
// two different tools. The zero value is ready; it is safe for concurrent
// use.
type Claims struct {
	mu     sync.Mutex
	owners map[string]string // tool → server
}

// claim takes name for server and reports whether server holds it now;
// false names the server that held it first.
func (c *Claims) claim(server, name string) (ok bool, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owners == nil {
		c.owners = map[string]string{}
	}
	if o, taken := c.owners[name]; taken && o != server {
		return false, o
	}
	c.owners[name] = server
	return true, server
}

// keep releases the names of server that are not in served.
func (c *Claims) keep(server string, served map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, o := range c.owners {
		if o == server && !served[name] {
			delete(c.owners, name)
		}
	}
}
