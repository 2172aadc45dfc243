package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// Process records (wire.ProcessRecord): a node publishes its processes'
// binaries and labels with a host request (coordproto.SubjectProcesses +
// "." + host), so the server's per-host permissions and servePerHost bind
// them to the host whose credentials sent them; the records themselves
// name no host. The tools read them back with a skip-paged query.

// ProcessesRequest carries a host's process records, each in its wire
// encoding (base64 in JSON).
type ProcessesRequest struct {
	Host    string
	Records [][]byte
}

// processesRequestBytes bounds one request's records (their encodings),
// well below NATS's default 1 MiB payload once in base64.
const processesRequestBytes = 512 << 10

// PutProcesses stores host's process records through the log, in as many
// requests as their size needs. Storing a record again replaces it with
// itself, so a retry is harmless.
func (c *Client) PutProcesses(ctx context.Context, host string, recs []*wire.ProcessRecord) error {
	subject, err := hostSubject(coordproto.SubjectProcesses, host)
	if err != nil {
		return err
	}
	req := ProcessesRequest{Host: host}
	size := 0
	send := func() error {
		if len(req.Records) == 0 {
			return nil
		}
		err := c.requestJSON(ctx, subject, req, nil, retryAll)
		req.Records, size = nil, 0
		return err
	}
	for i, r := range recs {
		b, err := r.MarshalBinary()
		if err != nil {
			return fmt.Errorf("coordinator: put processes of %q: record %d: %w", host, i, err)
		}
		if len(req.Records) == MaxProcesses || (size+len(b) > processesRequestBytes && len(req.Records) > 0) {
			if err := send(); err != nil {
				return err
			}
		}
		req.Records = append(req.Records, b)
		size += len(b)
	}
	return send()
}

// putProcesses is the leader's handler: the request's host is its
// subject's (servePerHost checked the body against it), and no record
// carries another.
func (l *leaderTerm) putProcesses(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var req ProcessesRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if len(req.Records) > MaxProcesses {
		return nil, fmt.Errorf("%w: put processes: %d records (cap %d)", ErrBadRequest, len(req.Records), MaxProcesses)
	}
	c := &PutProcesses{Host: req.Host}
	for i, b := range req.Records {
		r := new(wire.ProcessRecord)
		if err := r.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("%w: put processes of %q: record %d: %w", ErrBadRequest, req.Host, i, err)
		}
		c.Records = append(c.Records, r)
	}
	if _, err := l.apply(ctx, c); err != nil {
		return nil, fmt.Errorf("put processes of %q: %w", req.Host, err)
	}
	return nil, nil
}

// processPageRows bounds a page of process records; pages also stop at
// pageBytes of estimated JSON.
const processPageRows = 4096

func (s *service) queryProcesses(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[storage.Process](req, processPageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryProcesses, func(db *storage.DB) error {
		ps, err := db.Processes(req.Query.Hosts)
		if err != nil {
			return err
		}
		for _, p := range ps {
			size := 96 + len(p.Host) + len(p.Binary)
			for k, v := range p.Labels {
				size += len(k) + len(v) + 6
			}
			if err := page.add(func() storage.Process { return p }, size); err != nil {
				return page.end(err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(page.reply)
}

// Processes lists the process records of hosts (nil: every host's), from
// any replica (with linearizable, the leader after it has applied every
// earlier commit), each checked as the wire decoder checks it.
func (c *Client) Processes(ctx context.Context, hosts []string, linearizable bool) ([]storage.Process, error) {
	var out []storage.Process
	err := fetchSkipPages(ctx, c, coordproto.QueryProcesses, "processes", storage.Query{Hosts: hosts}, linearizable, func(p *storage.Process) error {
		if err := wire.CheckHost(p.Host); err != nil {
			return fmt.Errorf("coordinator: processes: %w: %w", ErrInternal, err)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("coordinator: processes: %w: %w", ErrInternal, err)
		}
		out = append(out, *p)
		return nil
	})
	return out, err
}
