package simhost

import (
	"context"
	"fmt"

	"dcpi/storage"
	"dcpi/wire"
)

// StreamTail is what the batch stream still holds of a host: per CPU, the
// sequence number and sample accounting of its newest batch (Seq 0: none).
// The coordinator reads it for the host (coordinator.Client.StreamTail).
type StreamTail interface {
	StreamTail(ctx context.Context, cpus int) ([]storage.StreamState, error)
}

// AppliedStreams is what the profile database has applied of a host's
// batch streams: per CPU, the last sequence number and the accounting of
// that batch. The coordinator's StreamState answers it.
type AppliedStreams interface {
	StreamState(ctx context.Context, cpu uint16) (storage.StreamState, error)
}

// ResumePoint is where a host's streams continue, and what its
// predecessor left unreported.
type ResumePoint struct {
	First   []uint64            // per CPU: the next batch sequence number
	Carried []map[string]uint64 // per CPU: wire.DropCrashLost, if any
	// Delivered is what the predecessor's hardware had reported
	// generating, and Lost what of it was neither published nor dropped.
	Delivered, Lost uint64
}

// Resume finds where each of a host's batch streams continues: past the
// newest batch still in the stream and past what the database applied,
// read in that order (a batch leaves the work-queue stream only after its
// commit, so nothing can slip between the two reads). The newer of the
// two also carries the predecessor's sample accounting: what its driver
// still held when that batch was cut died with it, and is carried into
// the successor's first batch as wire.DropCrashLost.
func Resume(ctx context.Context, stream StreamTail, db AppliedStreams, cpus int) (ResumePoint, error) {
	if cpus < 1 || cpus > wire.AllCPUs {
		return ResumePoint{}, fmt.Errorf("simhost: resume %d CPUs: want 1 to %d", cpus, wire.AllCPUs)
	}
	inStream, err := stream.StreamTail(ctx, cpus)
	if err != nil {
		return ResumePoint{}, err
	}
	if len(inStream) != cpus {
		return ResumePoint{}, fmt.Errorf("simhost: resume: the stream answered for %d CPUs, not %d", len(inStream), cpus)
	}
	rp := ResumePoint{First: make([]uint64, cpus), Carried: make([]map[string]uint64, cpus)}
	for cpu := range cpus {
		st, err := db.StreamState(ctx, uint16(cpu))
		if err != nil {
			return ResumePoint{}, fmt.Errorf("applied state of cpu %d: %w", cpu, err)
		}
		if tail := inStream[cpu]; tail.Seq > st.Seq {
			st = tail
		}
		if st.Accounted > st.Delivered {
			return ResumePoint{}, fmt.Errorf("simhost: resume cpu %d: batch %d accounts for %d samples of %d delivered", cpu, st.Seq, st.Accounted, st.Delivered)
		}
		rp.First[cpu] = st.Seq + 1
		rp.Delivered += st.Delivered
		if lost := st.Delivered - st.Accounted; lost > 0 {
			rp.Carried[cpu] = map[string]uint64{wire.DropCrashLost: lost}
			rp.Lost += lost
		}
	}
	return rp, nil
}
