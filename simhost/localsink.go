package simhost

import (
	"errors"
	"fmt"
	"time"

	"dcpi/hwsim"
	"dcpi/storage"
	"dcpi/wire"
)

// LocalSink publishes into an embedded Pebble profile database through
// package storage, so one host can be profiled with no cluster at all.
type LocalSink struct{ DB *storage.DB }

// ForHost is s storing host's process records too: a node.ProcessPublisher
// for the node on host.
func (s LocalSink) ForHost(host string) HostSink { return HostSink{LocalSink: s, Host: host} }

// HostSink is a LocalSink for one host's node: it also stores the node's
// process records, under Host (a local database has no credentials to
// take the host from; the cluster's coordinator does).
type HostSink struct {
	LocalSink
	Host string
}

// PublishProcess stores the process record of s.Host.
func (s HostSink) PublishProcess(r *wire.ProcessRecord) error {
	var m storage.Meta
	if err := m.PutProcess(s.Host, r); err != nil {
		return err
	}
	return s.DB.CommitMeta(&m)
}

// PublishImage stores the image record.
func (s LocalSink) PublishImage(r *wire.ImageRecord) error { return s.DB.PutImage(r) }

// PublishBatch applies the batch; a redelivered one changes nothing.
func (s LocalSink) PublishBatch(b *wire.Batch) error {
	_, err := s.DB.ApplyBatch(b)
	return err
}

// FirstSeq is, per CPU, where host's batch streams continue in the
// database: after what an earlier run applied, or the new batches would
// be taken for redeliveries.
func (s LocalSink) FirstSeq(host string, cpus int) ([]uint64, error) {
	first := make([]uint64, cpus)
	for cpu := range first {
		applied, err := s.DB.Applied(host, uint16(cpu))
		if err != nil {
			return nil, err
		}
		first[cpu] = applied + 1
	}
	return first, nil
}

// Register records the host in the database's node registry, as the
// coordinator does for a cluster's nodes: its CPUs and how many events
// each of its samples stands for under profile (EventsPerSample), which
// the analysis tools read to estimate counts, and its labels, which the
// tools select by (replacing an earlier run's, as a cluster node's
// registration does). A host registered before keeps its first
// registration time; at is the latest.
func (s LocalSink) Register(host string, cpus int, labels map[string]string, profile hwsim.ProfileConfig, at time.Time) error {
	if err := wire.CheckLabels(labels); err != nil {
		return fmt.Errorf("host %s: %w", host, err)
	}
	n := storage.Node{Host: host, CPUs: cpus, Labels: labels, Periods: EventsPerSample(profile), Registered: at, Updated: at}
	old, err := s.DB.Node(host)
	switch {
	case err == nil:
		n.Registered = old.Registered
	case !errors.Is(err, storage.ErrNotFound):
		return err
	}
	return s.DB.PutNode(n)
}
