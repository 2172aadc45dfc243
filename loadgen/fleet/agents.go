package fleet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/loadgen"
	"dcpi/transport"
	"dcpi/transport/auth"
)

// connectAgents opens the agents' NATS connections. With o.HostKeys each
// agent has a connection of its own on its host's key, as a node does, so
// the server checks every publish against that host's permissions and
// holds a connection per host: the keys are issued on the local server's
// store (the cluster loadgen started, or a dcpi nats-server of this
// user), all before the server's next key poll, which then loads them at
// once; a server without authentication gets the connections without
// keys. Without, the agents share o.Conns connections on the
// coordinator's key (a key that may publish for every host), which costs
// the server less than a fleet does. The returned func closes them all.
func connectAgents(ctx context.Context, ncfg config.NATS, hosts []string, o Options) ([]*nats.Conn, func(), error) {
	var conns []*nats.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	if !o.HostKeys {
		for i := range min(o.Conns, len(hosts)) {
			c, err := cluster.ConnectRole(ctx, ncfg, auth.Coordinator, "", fmt.Sprintf("loadgen-%d", i), o.Logger)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			conns = append(conns, c)
		}
		return conns, closeAll, nil
	}
	if ncfg.Creds != "" {
		return nil, nil, fmt.Errorf("loadgen: --host-keys issues each agent's key on the local server's store; with nats.creds given, run with --host-keys=false")
	}
	files := make([]string, len(hosts))
	ca := ncfg.CA
	if st, ok := auth.Lookup(ncfg.URLs); ok {
		var newest string
		for i, h := range hosts {
			f, err := st.HostFile(h)
			if err != nil {
				k, err := st.AddHost(h)
				if err != nil {
					return nil, nil, err
				}
				f, newest = k.File, k.PublicKey
			}
			files[i] = f
		}
		if newest != "" {
			// Keys issued together are loaded in one of the server's polls.
			if err := st.WaitLoaded(newest, time.Minute); err != nil {
				return nil, nil, fmt.Errorf("loadgen: %d host keys: %w", len(hosts), err)
			}
		}
		if st.HasCA() && ca == "" {
			ca = st.CAFile()
		}
	} // else no store of ours: a server without authentication, or one that refuses below
	conns = make([]*nats.Conn, len(hosts))
	closeAll = func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	if i, err := eachBounded(len(hosts), 32, func(i int) (err error) {
		conns[i], err = transport.Connect(transport.ConnConfig{URLs: ncfg.URLs, Name: "loadgen-" + hosts[i], CredsFile: files[i], CAFile: ca, Logger: o.Logger})
		return err
	}); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("loadgen: connecting agent %s: %w (a server with credentials not of this machine's dcpi nats-server: run with --host-keys=false and nats.creds)", hosts[i], err)
	}
	return conns, closeAll, nil
}

// agentControl is what a node's agent says to the coordinator besides its
// batches: its registration, then a heartbeat every interval (what keeps
// it live for epoch sealing), and, when a heartbeat shows the fleet in a
// later epoch, the cut of its agent and the acknowledgement of the epoch
// it left, as a node's Follow does. Each agent's goes through the
// coordinator client of its own connection.
type agentControl struct {
	agents                []*loadgen.Agent
	beats, failed         atomic.Uint64
	cuts, acks, ackFailed atomic.Uint64
	wg                    sync.WaitGroup
}

// registerAgents registers every host (cpus each), a few at a time.
func registerAgents(ctx context.Context, hosts []string, coords func(i int) *coordinator.Client, cpus int) error {
	i, err := eachBounded(len(hosts), 16, func(i int) error {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return coords(i).Register(c, hosts[i], map[string]string{"loadgen": "1"}, cpus, nil)
	})
	if err != nil {
		return fmt.Errorf("loadgen: registering %s: %w", hosts[i], err)
	}
	return nil
}

// eachBounded runs fn for every i in [0, n), at most limit at once, and
// returns the first failure in index order with its index.
func eachBounded(n, limit int, fn func(i int) error) (int, error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// ackTimeout bounds one round of an agent's acknowledgements.
const ackTimeout = 30 * time.Second

// start sends each host's heartbeats every interval until ctx ends, the
// hosts' first beats spread over one interval, and follows the fleet's
// epochs.
func (a *agentControl) start(ctx context.Context, hosts []string, coords func(i int) *coordinator.Client, interval time.Duration) {
	for i, h := range hosts {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			offset := interval * time.Duration(i) / time.Duration(len(hosts))
			select {
			case <-time.After(offset):
			case <-ctx.Done():
				return
			}
			t := time.NewTicker(interval)
			defer t.Stop()
			var pending []loadgen.EpochAck // acknowledgements not yet delivered, in order
			for {
				c, cancel := context.WithTimeout(ctx, interval)
				st, err := coords(i).Heartbeat(c, h)
				if err == nil {
					if cut, ok := a.agents[i].Cut(st.Epoch); ok {
						a.cuts.Add(1)
						pending = append(pending, cut.Acks()...)
					}
					// An ack commits through the Raft log: under load
					// it may take longer than a beat.
					actx, acancel := context.WithTimeout(ctx, ackTimeout)
					for len(pending) > 0 {
						if err := coords(i).AckEpoch(actx, h, pending[0].Epoch, pending[0].LastSeq); err != nil {
							if ctx.Err() == nil {
								a.ackFailed.Add(1) // sent again after the next beat
							}
							break
						}
						a.acks.Add(1)
						pending = pending[1:]
					}
					acancel()
				}
				cancel()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					a.failed.Add(1)
				} else {
					a.beats.Add(1)
				}
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
}
