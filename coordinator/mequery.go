package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
)

// QueryProfileMe is the query kind of storage.MeProfile.
const QueryProfileMe = "profileme"

// MeRequest asks for one page of storage.MeProfile rows: those after the
// first Skip (the rows' order is fixed for one database).
type MeRequest struct {
	Query   storage.Query
	Skip    int
	MaxRows int // 0: the server's page size
}

// MeRow is one row of storage.MeProfile; Counts are indexed by the wire.Me
// fields.
type MeRow struct {
	Image  string        `json:"image"`
	Offset uint64        `json:"offset"`
	Host   string        `json:"host,omitempty"`
	Counts wire.MeCounts `json:"counts"`
}

// MeReply is a page of ProfileMe rows; Last says no rows follow, Replica
// which replica to ask for the next page.
type MeReply struct {
	Rows    []MeRow
	Last    bool
	Replica string
}

// mePageRows bounds a page: a row is about 40 numbers of JSON.
const mePageRows = 4096

func (s *service) queryProfileMe(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req MeRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if req.Skip < 0 {
		return nil, fmt.Errorf("%w: skip %d", ErrBadRequest, req.Skip)
	}
	max := req.MaxRows
	if max <= 0 || max > mePageRows {
		max = mePageRows
	}
	out := MeReply{Last: true, Replica: s.r.cfg.ID}
	err := s.view(ctx, "query "+QueryProfileMe, func(db *storage.DB) error {
		i := 0
		err := db.MeProfile(req.Query, func(r *storage.MeRow) error {
			if i++; i <= req.Skip {
				return nil
			}
			if len(out.Rows) >= max {
				out.Last = false
				return errPageFull
			}
			out.Rows = append(out.Rows, MeRow{Image: r.Image.String(), Offset: r.Offset, Host: r.Host, Counts: r.Counts})
			return nil
		})
		if err == errPageFull {
			err = nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// MeProfile calls fn for every row of storage.MeProfile(q), fetching
// pages transparently from the replica that served the first (with
// linearizable, the leader after it has applied every earlier commit).
func (c *Client) MeProfile(ctx context.Context, q storage.Query, linearizable bool, fn func(r *storage.MeRow) error) error {
	req := MeRequest{Query: q, MaxRows: c.PageRows}
	subject := querySubject(QueryProfileMe, linearizable)
	for {
		var reply MeReply
		if err := c.requestJSON(ctx, subject, req, &reply, retryAll); err != nil {
			return err
		}
		for _, r := range reply.Rows {
			k, err := wire.ParseImageKey(r.Image)
			if err != nil {
				return fmt.Errorf("coordinator: ProfileMe: %w: %v", ErrInternal, err)
			}
			if err := fn(&storage.MeRow{Image: k, Offset: r.Offset, Host: r.Host, Counts: r.Counts}); err != nil {
				return err
			}
		}
		if reply.Last {
			return nil
		}
		if len(reply.Rows) == 0 {
			return fmt.Errorf("coordinator: ProfileMe: %w: empty page before the last", ErrInternal)
		}
		req.Skip += len(reply.Rows)
		subject = subjectReplica + reply.Replica + ".query." + QueryProfileMe
	}
}
