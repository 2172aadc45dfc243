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

// StackRow is one row of storage.Stacks.
type StackRow struct {
	ID        uint64       `json:"id"`
	Truncated bool         `json:"truncated,omitempty"`
	Frames    []StackFrame `json:"frames"`
	Event     uint8        `json:"event"`
	Host      string       `json:"host,omitempty"`
	Count     uint64       `json:"count"`
}

// StackFrame is a wire.Frame in JSON: Image is "" for a frame no image
// map covered (whose Offset is its raw PC).
type StackFrame struct {
	Image  string `json:"image,omitempty"`
	Offset uint64 `json:"offset"`
}

func stackFrames(fs []wire.Frame) []StackFrame {
	out := make([]StackFrame, len(fs))
	for i, f := range fs {
		out[i].Offset = f.Offset
		if !f.Image.IsZero() {
			out[i].Image = f.Image.String()
		}
	}
	return out
}

func wireFrames(fs []StackFrame) ([]wire.Frame, error) {
	out := make([]wire.Frame, len(fs))
	for i, f := range fs {
		out[i].Offset = f.Offset
		if f.Image != "" {
			k, err := wire.ParseImageKey(f.Image)
			if err != nil {
				return nil, err
			}
			out[i].Image = k
		}
	}
	return out, nil
}

// stackPageRows bounds a page; a row is up to 64 frames of about 90 bytes
// of JSON, so pages also stop at pageBytes.
const stackPageRows = 4096

func (s *service) queryStacks(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[StackRow](req, stackPageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryStacks, func(db *storage.DB) error {
		return page.end(db.Stacks(ctx, req.Query, func(st *storage.Stack, ev uint8, host string, n uint64) error {
			return page.add(func() StackRow {
				return StackRow{ID: st.ID, Truncated: st.Truncated, Frames: stackFrames(st.Frames), Event: ev, Host: host, Count: n}
			}, 64+len(host)+90*len(st.Frames))
		}))
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(page.reply)
}

// Stacks calls fn for every row of storage.Stacks(q), fetching pages
// transparently from the replica that served the first (with
// linearizable, the leader after it has applied every earlier commit).
func (c *Client) Stacks(ctx context.Context, q storage.Query, linearizable bool, fn func(st *storage.Stack, event uint8, host string, count uint64) error) error {
	return fetchSkipPages(ctx, c, coordproto.QueryStacks, "stacks", q, linearizable, func(r *StackRow) error {
		if len(r.Frames) == 0 {
			return fmt.Errorf("coordinator: stacks: %w: stack %016x without frames", ErrInternal, r.ID)
		}
		frames, err := wireFrames(r.Frames)
		if err != nil {
			return fmt.Errorf("coordinator: stacks: %w: stack %016x: %v", ErrInternal, r.ID, err)
		}
		return fn(&storage.Stack{ID: r.ID, Truncated: r.Truncated, Frames: frames}, r.Event, r.Host, r.Count)
	})
}
