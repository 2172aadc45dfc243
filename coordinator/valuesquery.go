package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/internal/bincodec"
	"dcpi/internal/hotlist"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/coordproto"
)

// Value sampling through the coordinator (docs/values.md, "Through the
// cluster"): the leader commits each merged value record (IngestValues),
// and every replica serves the stored hot lists and the interpreter's
// accounting.

// IngestValuesReply is the outcome of a value record.
type IngestValuesReply struct {
	Outcome storage.Outcome
}

// ValueListRow is one wire.ValueList: List is its hot list's binary
// encoding (hotlist.List.AppendBinary).
type ValueListRow struct {
	Image  wire.ImageKey
	Offset uint64
	Kind   uint8
	List   []byte
}

// ValueTotalsReply is storage.ValueTotals.
type ValueTotalsReply struct {
	Modules []string
	Stats   wire.ValueStats
}

// ValuesAppliedRequest names the host whose applied value Seq is asked.
type ValuesAppliedRequest struct{ Host string }

// ValuesAppliedReply is storage.ValuesApplied.
type ValuesAppliedReply struct{ Seq uint64 }

// valuePageRows bounds a page of hot lists; a list is at most 16 entries
// of about 20 bytes, about 450 bytes of JSON with its key.
const valuePageRows = 2048

func encodeIngestValues(first uint64, r *wire.ValuesRecord) ([]byte, error) {
	b, err := r.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return bincodec.AppendBytes(bincodec.AppendUvarint(nil, first), b), nil
}

func (l *leaderTerm) ingestValues(ctx context.Context, m *nats.Msg) ([]byte, error) {
	d := bincodec.NewDecoder(m.Data, 0)
	first := d.Uvarint("first")
	b := d.LenBytes("values record", wire.MaxMessageBytes)
	d.End()
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: ingest values: %w", ErrBadRequest, err)
	}
	var r wire.ValuesRecord
	if err := r.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: ingest values: %w", ErrBadRequest, err)
	}
	if first == 0 || first > r.Seq {
		return nil, fmt.Errorf("%w: ingest values: run %d..%d", ErrBadRequest, first, r.Seq)
	}
	res, err := l.apply(ctx, &IngestValues{First: first, Record: &r})
	if err != nil {
		return nil, fmt.Errorf("ingest values %d..%d of %q: %w", first, r.Seq, r.Host, err)
	}
	out, ok := res.(storage.Outcome)
	if !ok {
		return nil, fmt.Errorf("%w: ingest values: result %T", ErrInternal, res)
	}
	return json.Marshal(IngestValuesReply{Outcome: out})
}

func valueQuery(q storage.Query) storage.ValueQuery {
	return storage.ValueQuery{Epochs: q.Epochs, Hosts: q.Hosts}
}

func (s *service) queryValues(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[ValueListRow](req, valuePageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryValues, func(db *storage.DB) error {
		lists, err := db.ValueLists(ctx, valueQuery(req.Query))
		if err != nil {
			return err
		}
		for _, l := range lists {
			err := page.add(func() ValueListRow {
				return ValueListRow{Image: l.Image, Offset: l.Offset, Kind: l.Kind, List: l.List.AppendBinary(nil)}
			}, 120+30*len(l.List.Entries))
			if err != nil {
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

func (s *service) queryValueTotals(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var q storage.Query
	if err := decodeJSON(m, &q); err != nil {
		return nil, err
	}
	var reply ValueTotalsReply
	err := s.view(ctx, "query "+coordproto.QueryValueTotals, func(db *storage.DB) error {
		var err error
		reply.Modules, reply.Stats, err = db.ValueTotals(ctx, valueQuery(q))
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(reply)
}

func (s *service) queryValuesApplied(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req ValuesAppliedRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if err := wire.CheckHost(req.Host); err != nil {
		return nil, fmt.Errorf("%w: values applied: %w", ErrBadRequest, err)
	}
	var reply ValuesAppliedReply
	err := s.view(ctx, "query "+coordproto.QueryValuesApplied, func(db *storage.DB) error {
		var err error
		reply.Seq, err = db.ValuesApplied(req.Host)
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(reply)
}

// IngestValues commits the merge of a host's value records first..r.Seq
// and returns its outcome (storage.ApplyValuesWith). It is retried until
// it is known to have committed: a second commit is a Duplicate.
func (c *Client) IngestValues(ctx context.Context, first uint64, r *wire.ValuesRecord) (storage.Outcome, error) {
	data, err := encodeIngestValues(first, r)
	if err != nil {
		return 0, fmt.Errorf("coordinator: ingest values: %w", err)
	}
	msg, err := c.request(ctx, coordproto.SubjectIngestValues, data, retryAll)
	if err != nil {
		return 0, err
	}
	var reply IngestValuesReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return 0, fmt.Errorf("coordinator: ingest values: reply: %w", err)
	}
	return reply.Outcome, nil
}

// ValueLists is storage.ValueLists over the coordinator's database (the
// Epochs and Hosts of q; none: every epoch, the fleet), fetched in pages
// from one replica, or from the leader after every earlier commit with
// linearizable.
func (c *Client) ValueLists(ctx context.Context, q storage.Query, linearizable bool) ([]wire.ValueList, error) {
	var out []wire.ValueList
	err := fetchSkipPages(ctx, c, coordproto.QueryValues, "values", q, linearizable, func(r *ValueListRow) error {
		d := bincodec.NewDecoder(r.List, 0)
		l := hotlist.Decode(d)
		d.End()
		if err := d.Err(); err != nil {
			return fmt.Errorf("coordinator: values: %w: hot list of %s+%#x: %v", ErrInternal, r.Image, r.Offset, err)
		}
		out = append(out, wire.ValueList{Image: r.Image, Offset: r.Offset, Kind: r.Kind, List: l})
		return nil
	})
	return out, err
}

// ValueTotals is storage.ValueTotals over the coordinator's database,
// from any replica (the leader after every earlier commit with
// linearizable).
func (c *Client) ValueTotals(ctx context.Context, q storage.Query, linearizable bool) ([]string, wire.ValueStats, error) {
	var reply ValueTotalsReply
	err := c.requestJSON(ctx, querySubject(coordproto.QueryValueTotals, linearizable), q, &reply, retryAll)
	return reply.Modules, reply.Stats, err
}

// ValuesApplied returns host's last applied value record Seq, from the
// leader after every earlier commit: a restarted node numbers its records
// after it (and after the newest its stream still holds).
func (c *Client) ValuesApplied(ctx context.Context, host string) (uint64, error) {
	var reply ValuesAppliedReply
	subject, err := hostSubject(querySubject(coordproto.QueryValuesApplied, true), host)
	if err != nil {
		return 0, err
	}
	err = c.requestJSON(ctx, subject, ValuesAppliedRequest{Host: host}, &reply, retryAll)
	return reply.Seq, err
}
