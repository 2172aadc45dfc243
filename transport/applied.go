package transport

import (
	"context"
	"fmt"
	"time"
)

// pollApplied is the end-to-end acknowledgment's loop: every AppliedPoll
// it asks, in one request for all the streams holding retained batches,
// how far the coordinator has applied each, releases what is applied, and queues for
// sending again the batches of streams that have stalled.
func (p *Publisher) pollApplied() {
	defer close(p.polled)
	tick := time.NewTicker(p.cfg.AppliedPoll)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-tick.C:
		case <-p.ctx.Done():
			return
		}
		p.mu.Lock()
		cpus := p.ret.cpus()
		p.mu.Unlock()
		if len(cpus) > 0 {
			ctx, cancel := context.WithTimeout(p.ctx, p.cfg.AckTimeout)
			applied, err := p.cfg.Applied(ctx, cpus)
			cancel()
			if p.ctx.Err() != nil {
				return
			}
			if err == nil && len(applied) != len(cpus) {
				err = fmt.Errorf("%d applied Seqs for %d streams", len(applied), len(cpus))
			}
			p.mu.Lock()
			if err != nil {
				p.st.AppliedErrors++
				if !failing {
					failing = true
					p.logf("transport: publisher %s: applied seqs of CPUs %v: %v (retained batches are kept; asking again)", p.cfg.Host, cpus, err)
				}
			} else {
				failing = false
				released := 0
				for i, cpu := range cpus {
					released += p.ret.release(cpu, applied[i], time.Now())
				}
				if released > 0 {
					p.st.Released += uint64(released)
					p.signal() // a batch may be waiting for room
					p.broadcast()
				}
			}
			p.mu.Unlock()
		}
		p.mu.Lock()
		if again := p.ret.stalled(time.Now(), p.cfg.RepublishAfter); len(again) > 0 {
			n := 0
			for _, it := range again {
				if !it.resending {
					it.resending = true
					p.resend = append(p.resend, it)
					n++
				}
			}
			if n > 0 {
				p.logf("transport: publisher %s: %d retained batches not applied for %v: sending them again", p.cfg.Host, n, p.cfg.RepublishAfter)
				p.signal()
			}
		}
		p.mu.Unlock()
	}
}

// resendRetained sends a retained batch again, with its message ID.
func (p *Publisher) resendRetained(it *item) error {
	var dup bool
	var err error
	if !p.nc.IsConnected() {
		err = fmt.Errorf("publish %s again: %w", it.describe(), errNotConnected)
	} else {
		dup, err = p.sendBatch(it)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.ctx.Err() == nil {
			p.st.Retries++
			p.st.LastError = err.Error()
		}
		return err
	}
	p.resend[0] = nil
	p.resend = p.resend[1:]
	it.resending = false
	p.st.Republished++
	if dup {
		p.st.RepublishedDups++
	}
	p.st.LastError = ""
	return nil
}

// WaitApplied waits until every message is sent and, with the end-to-end
// acknowledgment on, every batch sent is applied (nothing retained), or
// ctx ends.
func (p *Publisher) WaitApplied(ctx context.Context) error {
	for {
		p.mu.Lock()
		n, ch, stopped := p.q.len(), p.changed, p.stopped
		if p.ret != nil {
			n += p.ret.batches
		}
		p.mu.Unlock()
		if n == 0 {
			return nil
		}
		if stopped {
			return fmt.Errorf("transport: wait applied: %w with %d messages queued or unapplied", ErrClosed, n)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("transport: wait applied: %d messages queued or unapplied: %w", n, ctx.Err())
		}
	}
}
