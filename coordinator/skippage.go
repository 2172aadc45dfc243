package coordinator

import (
	"context"
	"dcpi/wire/coordproto"
	"fmt"

	"dcpi/storage"
)

// SkipRequest asks for one page of a skip-paged query (stacks,
// ProfileMe): the rows after the first Skip, whose order is fixed for one
// database.
type SkipRequest struct {
	Query   storage.Query
	Skip    int
	MaxRows int // 0: the server's page size
}

// SkipReply is a page of a skip-paged query; Last says no rows follow,
// Replica which replica to ask for the next page.
type SkipReply[R any] struct {
	Rows    []R
	Last    bool
	Replica string
}

// skipPage fills one SkipReply on the server: it passes over the first
// skip rows and stops at max rows or, for rows that give a size, at
// pageBytes of estimated JSON.
type skipPage[R any] struct {
	skip, max  int
	seen, size int
	reply      SkipReply[R]
}

// newSkipPage starts the page req asks for; limit is the query's largest
// page.
func newSkipPage[R any](req SkipRequest, limit int, replica string) (*skipPage[R], error) {
	if req.Skip < 0 {
		return nil, fmt.Errorf("%w: skip %d", ErrBadRequest, req.Skip)
	}
	max := req.MaxRows
	if max <= 0 || max > limit {
		max = limit
	}
	return &skipPage[R]{skip: req.Skip, max: max, reply: SkipReply[R]{Last: true, Replica: replica}}, nil
}

// add offers the next row of the scan: row builds it only when the page
// keeps it, size is its estimated JSON bytes (0 where rows are small and
// max alone bounds the page). It returns errPageFull once the page is
// full, which end clears.
func (p *skipPage[R]) add(row func() R, size int) error {
	if p.seen++; p.seen <= p.skip {
		return nil
	}
	if len(p.reply.Rows) >= p.max || p.size >= pageBytes {
		p.reply.Last = false
		return errPageFull
	}
	p.reply.Rows = append(p.reply.Rows, row())
	p.size += size
	return nil
}

// end returns the scan's error, nil where it stopped on a full page.
func (p *skipPage[R]) end(err error) error {
	if err == errPageFull {
		return nil
	}
	return err
}

// fetchSkipPages calls fn for every row of a skip-paged query kind,
// fetching pages transparently from the replica that served the first
// (with linearizable, the leader after it has applied every earlier
// commit); what names the query in errors.
func fetchSkipPages[R any](ctx context.Context, c *Client, kind, what string, q storage.Query, linearizable bool, fn func(r *R) error) error {
	req := SkipRequest{Query: q, MaxRows: c.PageRows}
	subject := querySubject(kind, linearizable)
	for {
		var reply SkipReply[R]
		if err := c.requestJSON(ctx, subject, req, &reply, retryAll); err != nil {
			return err
		}
		for i := range reply.Rows {
			if err := fn(&reply.Rows[i]); err != nil {
				return err
			}
		}
		if reply.Last {
			return nil
		}
		if len(reply.Rows) == 0 {
			return fmt.Errorf("coordinator: %s: %w: empty page before the last", what, ErrInternal)
		}
		req.Skip += len(reply.Rows)
		subject = coordproto.SubjectReplica + reply.Replica + ".query." + kind
	}
}
