package linuxnode

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/analysis/symbolize"
	"dcpi/linuxhost"
	"dcpi/transport"
	"dcpi/wire"
)

// uploader uploads the files of the images the node recorded to the
// cluster's image file bucket by content key (transport.PutImageFile),
// as a simulated host uploads its user's programs, so that dcpi list and
// pprof read them on any machine. It runs on its own goroutine: the
// daemon only queues, and a file is read and sent once per run.
type uploader struct {
	nc   *nats.Conn
	max  int64 // bytes of a file sent
	lf   func(string, ...any)
	wake chan struct{}

	mu      sync.Mutex
	queue   []*wire.ImageRecord
	busy    bool
	idle    *sync.Cond
	seen    map[wire.ImageKey]bool
	results UploadStats
}

// UploadStats count what the uploader did: files uploaded, already in
// the bucket, not sent (gone, changed or too large), failed, and left
// queued when the host stopped.
type UploadStats struct {
	Uploaded, Present, Skipped, Failed, Abandoned int
}

func newUploader(nc *nats.Conn, max int64, lf func(string, ...any)) *uploader {
	u := &uploader{nc: nc, max: max, lf: lf, wake: make(chan struct{}, 1), seen: map[wire.ImageKey]bool{}}
	u.idle = sync.NewCond(&u.mu)
	return u
}

// wantsUpload reports whether r names a file the uploader should send:
// a file on this machine (not the kernel, not a pseudo-path).
func wantsUpload(r *wire.ImageRecord) bool {
	return r.Path != "" && r.Path[0] == '/' && r.Path != linuxhost.KernelPath
}

// add queues r's file, once per key.
func (u *uploader) add(r *wire.ImageRecord) {
	if !wantsUpload(r) {
		return
	}
	u.mu.Lock()
	if u.seen[r.Key] {
		u.mu.Unlock()
		return
	}
	u.seen[r.Key] = true
	u.queue = append(u.queue, r)
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// run uploads what is queued until ctx ends.
func (u *uploader) run(ctx context.Context) {
	var js jetstream.JetStream
	for {
		u.mu.Lock()
		if len(u.queue) == 0 {
			u.busy = false
			u.idle.Broadcast()
			u.mu.Unlock()
			select {
			case <-ctx.Done():
				u.mu.Lock()
				u.results.Abandoned += len(u.queue)
				u.queue = nil
				u.idle.Broadcast()
				u.mu.Unlock()
				return
			case <-u.wake:
				continue
			}
		}
		r := u.queue[0]
		u.queue = u.queue[1:]
		u.busy = true
		u.mu.Unlock()
		if js == nil {
			var err error
			if js, err = jetstream.New(u.nc); err != nil {
				u.lf("uploading image files: %v", err)
				js = nil
				continue
			}
		}
		res := u.upload(ctx, js, r)
		u.mu.Lock()
		switch res {
		case "uploaded":
			u.results.Uploaded++
		case "present":
			u.results.Present++
		case "skipped":
			u.results.Skipped++
		default:
			u.results.Failed++
		}
		u.mu.Unlock()
	}
}

// upload sends r's file if it is still the image recorded (its content
// key is r.Key) and not too large.
func (u *uploader) upload(ctx context.Context, js jetstream.JetStream, r *wire.ImageRecord) string {
	st, err := os.Stat(r.Path)
	if err != nil {
		return "skipped" // gone since it was sampled
	}
	if st.Size() > u.max {
		u.lf("not uploading %s: %d bytes (cap %d); dcpi list --image-dir finds it on this machine", r.Path, st.Size(), u.max)
		return "skipped"
	}
	data, err := os.ReadFile(r.Path)
	if err != nil {
		return "skipped"
	}
	if k, _, err := symbolize.ImageKeyOf(data, r.Path); err != nil || k != r.Key {
		return "skipped" // replaced since: not the image sampled
	}
	up, err := transport.PutImageFile(ctx, js, r.Key, data)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			u.lf("uploading %s: %v", r.Path, err)
		}
		return "failed"
	case up:
		u.lf("uploaded %s (%v, %d bytes) for the analysis tools", r.Path, r.Key, len(data))
		return "uploaded"
	}
	return "present"
}

// wait waits until the queue is empty and no upload is under way, or ctx
// ends.
func (u *uploader) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		u.mu.Lock()
		for len(u.queue) > 0 || u.busy {
			u.idle.Wait()
		}
		u.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		u.mu.Lock()
		u.results.Abandoned += len(u.queue)
		u.queue = nil
		u.idle.Broadcast()
		u.mu.Unlock()
	}
}

// stats is what the uploader did so far.
func (u *uploader) stats() UploadStats {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.results
}

func (s UploadStats) String() string {
	return fmt.Sprintf("%d image files uploaded, %d already there, %d not sent (gone, changed or too large), %d failed, %d left when it stopped",
		s.Uploaded, s.Present, s.Skipped, s.Failed, s.Abandoned)
}
