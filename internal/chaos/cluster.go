package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsNode is one nats-server of the fleet: its process, the server name it
// was given (as JetStream reports stream leaders) and its client URL.
type natsNode struct {
	*proc.Proc
	server string
	url    string
}

// newNodes returns the fleet's NATS servers: one, or n clustered on
// loopback, each with its own store directory, ports and server name. The
// servers are not started.
func newNodes(cfg *Config, dir string, n int) ([]*natsNode, error) {
	ports := make([]int, 2*n) // client ports, then cluster ports
	for i := range ports {
		p, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var nodes []*natsNode
	for i := range n {
		name, store := "nats-server", filepath.Join(dir, "jetstream")
		if n > 1 {
			name = fmt.Sprintf("nats-%d", i+1)
			store = filepath.Join(dir, name+"-jetstream")
		}
		url := "nats://127.0.0.1:" + strconv.Itoa(ports[i])
		argv := []string{cfg.NATSServer, "-a", "127.0.0.1", "-p", strconv.Itoa(ports[i]), "-js", "-sd", store, "-n", name}
		if n > 1 {
			var routes []string
			for j := range n {
				if j != i {
					routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(ports[n+j]))
				}
			}
			argv = append(argv, "--cluster_name", "chaos", "--cluster", "nats://127.0.0.1:"+strconv.Itoa(ports[n+i]),
				"--routes", strings.Join(routes, ","),
				// Clients keep to the URLs they were given: an orchestrator's
				// are its fault proxies, which it must not go around.
				"--no_advertise")
		}
		nodes = append(nodes, &natsNode{
			Proc:   &proc.Proc{Name: name, Log: filepath.Join(dir, name+".log"), Argv: argv, Ready: natsReady(url)},
			server: name, url: url,
		})
	}
	return nodes, nil
}

// clientURL is the comma-separated list of the nodes' client URLs, the
// --nats-url of every client.
func clientURL(nodes []*natsNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url
	}
	return strings.Join(urls, ",")
}

// natsReady is a readiness probe of one NATS server: a client connects to
// it and JetStream answers (in a cluster: there is a meta leader and this
// server takes part).
func natsReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.MaxReconnects(0))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = js.AccountInfo(actx)
		return err
	}
}

// readyStream is the stream the cluster probe creates and deletes.
const readyStream = "CHAOS_READY"

// clusterReady is one probe of a NATS cluster as a whole: a stream with a
// replica on every node can be created (so every node takes part in
// JetStream again), and the input stream, once it exists, has a leader.
func clusterReady(ctx context.Context, url string, replicas int) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(cctx, jetstream.StreamConfig{
		Name: readyStream, Subjects: []string{"chaos.ready"}, Storage: jetstream.MemoryStorage, Replicas: replicas,
	}); err != nil {
		return fmt.Errorf("test stream: %w", err)
	}
	if err := js.DeleteStream(cctx, readyStream); err != nil {
		return fmt.Errorf("test stream: %w", err)
	}
	info, err := js.Stream(cctx, inputStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", inputStream, err)
	}
	if c := info.CachedInfo().Cluster; c == nil || c.Leader == "" {
		return fmt.Errorf("%s has no leader", inputStream)
	}
	return nil
}

// waitCluster waits until the NATS cluster is ready as a whole; with one
// server there is nothing more to wait for.
func (f *fleet) waitCluster(ctx context.Context) error {
	if len(f.nodes) < 2 {
		return nil
	}
	return proc.WaitFor(ctx, proc.StartTimeout, "the NATS cluster", func() (bool, error) {
		err := clusterReady(ctx, f.url, len(f.nodes))
		return err == nil, err
	})
}

// inputLeader returns the node that leads the input stream now, waiting
// (bounded) while the stream has no leader.
func (f *fleet) inputLeader(ctx context.Context) (*natsNode, error) {
	var leader *natsNode
	err := proc.WaitFor(ctx, proc.StartTimeout, "a leader of "+inputStream, func() (bool, error) {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := f.js.Stream(ictx, inputStream)
		if err != nil {
			return false, err
		}
		c := s.CachedInfo().Cluster
		if c == nil || c.Leader == "" {
			return false, errors.New("no leader")
		}
		for _, n := range f.nodes {
			if n.server == c.Leader {
				leader = n
				return true, nil
			}
		}
		return false, fmt.Errorf("leader %q is none of the fleet's servers", c.Leader)
	})
	return leader, err
}
