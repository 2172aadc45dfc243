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

// MeRow is one row of storage.MeProfile; Counts are indexed by the wire.Me
// fields.
type MeRow struct {
	Image  string        `json:"image"`
	Offset uint64        `json:"offset"`
	Host   string        `json:"host,omitempty"`
	Counts wire.MeCounts `json:"counts"`
}

// mePageRows bounds a page: a row is about 40 numbers of JSON.
const mePageRows = 4096

func (s *service) queryProfileMe(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[MeRow](req, mePageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryProfileMe, func(db *storage.DB) error {
		return page.end(db.MeProfile(ctx, req.Query, func(r *storage.MeRow) error {
			return page.add(func() MeRow {
				return MeRow{Image: r.Image.String(), Offset: r.Offset, Host: r.Host, Counts: r.Counts}
			}, 0)
		}))
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(page.reply)
}

// MeProfile calls fn for every row of storage.MeProfile(q), fetching
// pages transparently from the replica that served the first (with
// linearizable, the leader after it has applied every earlier commit).
func (c *Client) MeProfile(ctx context.Context, q storage.Query, linearizable bool, fn func(r *storage.MeRow) error) error {
	return fetchSkipPages(ctx, c, coordproto.QueryProfileMe, "ProfileMe", q, linearizable, func(r *MeRow) error {
		k, err := wire.ParseImageKey(r.Image)
		if err != nil {
			return fmt.Errorf("coordinator: ProfileMe: %w: %v", ErrInternal, err)
		}
		return fn(&storage.MeRow{Image: k, Offset: r.Offset, Host: r.Host, Counts: r.Counts})
	})
}

// MeHistRow is one row of storage.MeHistory.
type MeHistRow struct {
	Image   string `json:"image"`
	Offset  uint64 `json:"offset"`
	History uint16 `json:"history"`
	Count   uint64 `json:"count"`
}

// meHistPageRows bounds a history page: a row is four numbers.
const meHistPageRows = 32768

func (s *service) queryMeHistory(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[MeHistRow](req, meHistPageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryMeHistory, func(db *storage.DB) error {
		return page.end(db.MeHistory(ctx, req.Query, func(r *storage.MeHistRow) error {
			return page.add(func() MeHistRow {
				return MeHistRow{Image: r.Image.String(), Offset: r.Offset, History: r.History, Count: r.Count}
			}, 0)
		}))
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(page.reply)
}

// MeHistory calls fn for every row of storage.MeHistory(q), paging as
// MeProfile does.
func (c *Client) MeHistory(ctx context.Context, q storage.Query, linearizable bool, fn func(r *storage.MeHistRow) error) error {
	return fetchSkipPages(ctx, c, coordproto.QueryMeHistory, "ProfileMe history", q, linearizable, func(r *MeHistRow) error {
		k, err := wire.ParseImageKey(r.Image)
		if err != nil {
			return fmt.Errorf("coordinator: ProfileMe history: %w: %v", ErrInternal, err)
		}
		return fn(&storage.MeHistRow{Image: k, Offset: r.Offset, History: r.History, Count: r.Count})
	})
}

// MeAddrRow is one row of storage.MeAddrs: List is its hot list's binary
// encoding (hotlist.List.AppendBinary), as ValueListRow's.
type MeAddrRow struct {
	Image  string `json:"image"`
	Offset uint64 `json:"offset"`
	List   []byte `json:"list"`
}

// meAddrPageRows bounds an address page: a list is at most 16 entries,
// about 450 bytes of JSON with its key (add's size bounds it too).
const meAddrPageRows = 2048

func (s *service) queryMeAddrs(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req SkipRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	page, err := newSkipPage[MeAddrRow](req, meAddrPageRows, s.r.cfg.ID)
	if err != nil {
		return nil, err
	}
	err = s.view(ctx, "query "+coordproto.QueryMeAddrs, func(db *storage.DB) error {
		return page.end(db.MeAddrs(ctx, req.Query, func(r *storage.MeAddrRow) error {
			return page.add(func() MeAddrRow {
				return MeAddrRow{Image: r.Image.String(), Offset: r.Offset, List: r.List.AppendBinary(nil)}
			}, 120+30*len(r.List.Entries))
		}))
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(page.reply)
}

// MeAddrs calls fn for every row of storage.MeAddrs(q), paging as
// MeProfile does.
func (c *Client) MeAddrs(ctx context.Context, q storage.Query, linearizable bool, fn func(r *storage.MeAddrRow) error) error {
	return fetchSkipPages(ctx, c, coordproto.QueryMeAddrs, "ProfileMe addresses", q, linearizable, func(r *MeAddrRow) error {
		k, err := wire.ParseImageKey(r.Image)
		if err != nil {
			return fmt.Errorf("coordinator: ProfileMe addresses: %w: %v", ErrInternal, err)
		}
		d := bincodec.NewDecoder(r.List, 0)
		l := hotlist.Decode(d)
		d.End()
		if err := d.Err(); err != nil {
			return fmt.Errorf("coordinator: ProfileMe addresses: %w: hot list of %s+%#x: %v", ErrInternal, r.Image, r.Offset, err)
		}
		return fn(&storage.MeAddrRow{Image: k, Offset: r.Offset, List: l})
	})
}
