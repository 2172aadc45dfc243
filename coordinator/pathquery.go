package coordinator

import (
	"context"
	"dcpi/wire/coordproto"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"dcpi/storage"
	"dcpi/wire"
)

// PathUploadReply is the outcome of a path upload (storage.PathOutcome).
type PathUploadReply struct {
	Status storage.PathStatus
	Reason string `json:",omitempty"`
}

// PathImageInfo is one storage.PathImage.
type PathImageInfo struct {
	Source    wire.PathSource
	Image     wire.ImageKey
	ImagePath string
	Hosts     []string
}

// PathsRequest asks for the merged path profile of (Source, Image), over
// Hosts (nil: every host).
type PathsRequest struct {
	Source wire.PathSource
	Image  wire.ImageKey
	Hosts  []string
}

func (l *leaderTerm) uploadPaths(ctx context.Context, m *nats.Msg) ([]byte, error) {
	var u wire.PathUpload
	if err := u.UnmarshalBinary(m.Data); err != nil {
		return nil, fmt.Errorf("%w: upload paths: %w", ErrBadRequest, err)
	}
	res, err := l.apply(ctx, &UploadPaths{Upload: &u})
	if err != nil {
		return nil, fmt.Errorf("upload paths of %s from %q: %w", u.Image, u.Host, err)
	}
	out, ok := res.(storage.PathOutcome)
	if !ok {
		return nil, fmt.Errorf("%w: upload paths: result %T", ErrInternal, res)
	}
	return json.Marshal(PathUploadReply(out))
}

func (s *service) queryPathImages(ctx context.Context, _ *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var out []PathImageInfo
	err := s.view(ctx, "query "+coordproto.QueryPathImages, func(db *storage.DB) error {
		ims, err := db.PathImages(0)
		for _, im := range ims {
			out = append(out, PathImageInfo(im))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (s *service) queryPaths(ctx context.Context, m *nats.Msg, _ func(string) (bool, time.Time, bool)) ([]byte, error) {
	var req PathsRequest
	if err := decodeJSON(m, &req); err != nil {
		return nil, err
	}
	if err := req.Source.Check(); err != nil {
		return nil, fmt.Errorf("%w: paths: %w", ErrBadRequest, err)
	}
	var out []byte
	err := s.view(ctx, "query "+coordproto.QueryPaths, func(db *storage.DB) error {
		p, err := db.PathProfile(req.Source, req.Image, req.Hosts)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			out = []byte{} // none: an empty reply
			return nil
		case errors.Is(err, storage.ErrInvalid):
			return fmt.Errorf("%w: paths: %w", ErrBadRequest, err)
		case err != nil:
			return err
		}
		out, err = p.MarshalBinary()
		return err
	})
	return out, err
}

// UploadPaths commits a path upload and returns its outcome. It is retried
// until it is known to have committed: the upload ID makes a second
// commit a duplicate that changes nothing.
func (c *Client) UploadPaths(ctx context.Context, u *wire.PathUpload) (storage.PathOutcome, error) {
	data, err := u.MarshalBinary()
	if err != nil {
		return storage.PathOutcome{}, fmt.Errorf("coordinator: upload paths: %w", err)
	}
	msg, err := c.request(ctx, coordproto.SubjectUploadPaths, data, retryAll)
	if err != nil {
		return storage.PathOutcome{}, err
	}
	var r PathUploadReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return storage.PathOutcome{}, fmt.Errorf("coordinator: upload paths: reply: %w", err)
	}
	return storage.PathOutcome(r), nil
}

// PathImages lists the images with merged path profiles.
func (c *Client) PathImages(ctx context.Context) ([]storage.PathImage, error) {
	var reply []PathImageInfo
	if err := c.requestJSON(ctx, querySubject(coordproto.QueryPathImages, false), nil, &reply, retryAll); err != nil {
		return nil, err
	}
	out := make([]storage.PathImage, len(reply))
	for i, im := range reply {
		out[i] = storage.PathImage(im)
	}
	return out, nil
}

// PathProfile is storage.PathProfile read from a replica; ErrNotFound
// (storage's) when nothing is merged for the request.
func (c *Client) PathProfile(ctx context.Context, src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error) {
	data, err := json.Marshal(PathsRequest{Source: src, Image: image, Hosts: hosts})
	if err != nil {
		return nil, err
	}
	msg, err := c.request(ctx, querySubject(coordproto.QueryPaths, false), data, retryAll)
	if err != nil {
		return nil, err
	}
	if len(msg.Data) == 0 {
		return nil, fmt.Errorf("coordinator: paths of %s %s: %w", src, image, storage.ErrNotFound)
	}
	var p wire.PathProfile
	if err := p.UnmarshalBinary(msg.Data); err != nil {
		return nil, fmt.Errorf("coordinator: paths: %w: %w", ErrInternal, err)
	}
	return &p, nil
}
