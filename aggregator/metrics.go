package aggregator

import (
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/storage"
)

// The aggregator's metrics: its counters (Stats), read at scrape time,
// deltas by the state machine's outcome, and two latencies observed once
// per proposal and once per fetch.
var (
	mFetched = telemetry.Counter("dcpi_aggregator_batches_fetched_total",
		"Deliveries taken from the stream (redeliveries included).")
	mAcked = telemetry.Counter("dcpi_aggregator_batches_acked_total",
		"Batches acknowledged after the commit of the proposal carrying them (new or redelivered).")
	mSamples = telemetry.Counter("dcpi_aggregator_samples_applied_total",
		"Samples in batches this aggregator saw newly applied (a commit whose answer was lost comes back as a duplicate, so the database is the reference).")
	mEntriesIn  = telemetry.Counter("dcpi_aggregator_entries_in_total", "Entries in the batches fetched (flat, unknown, stacks and ProfileMe entries, as entries out counts them).")
	mEntriesOut = telemetry.Counter("dcpi_aggregator_entries_out_total",
		"Entries in the deltas proposed: in over out is what merging saved.")
	mProposals = telemetry.Counter("dcpi_aggregator_proposals_total", "Raft proposals sent to the coordinator.")
	mRejected  = telemetry.Counter("dcpi_aggregator_rejected_total",
		"Messages terminated as malformed or forged (the reason is logged).")
	mGaps = telemetry.Counter("dcpi_aggregator_gap_batches_total",
		"Batches handed back to the stream because a predecessor was not stored yet.")
	mPending = telemetry.Gauge("dcpi_aggregator_pending_entries",
		"Entries of the batches fetched and not yet settled (bounded by aggregator.max_pending_entries).")
	mDeltas = telemetry.Counter("dcpi_aggregator_deltas_total",
		"Deltas by the state machine's outcome: applied, duplicate (stored already), gap, overlap.", "outcome")

	mProposeSeconds = prometheus.HistogramOpts{Name: "dcpi_aggregator_propose_seconds",
		Help:    "A proposal's round trip: from sending it to the coordinator to its committed outcomes.",
		Buckets: telemetry.LatencyBuckets}
	mAckSeconds = prometheus.HistogramOpts{Name: "dcpi_aggregator_ack_seconds",
		Help:    "A fetch's time in the aggregator: from delivery to the acknowledgement (or hand-back) of its batches, proposals and commits included.",
		Buckets: telemetry.LatencyBuckets}

	aggregatorDescs = telemetry.Descs{mFetched, mAcked, mSamples, mEntriesIn, mEntriesOut, mProposals, mRejected, mGaps, mPending, mDeltas}
)

func newHistogram(o prometheus.HistogramOpts) prometheus.Histogram { return prometheus.NewHistogram(o) }

// outcomeIndex is o's slot in Aggregator.outcomes: the outcome itself, or
// 0 for a value the state machine does not answer.
func outcomeIndex(o storage.Outcome) int {
	if o >= storage.Applied && o <= storage.Unfold {
		return int(o)
	}
	return 0
}

// Collector reports the aggregator's metrics.
func (a *Aggregator) Collector() prometheus.Collector { return aggregatorCollector{a} }

type aggregatorCollector struct{ a *Aggregator }

func (c aggregatorCollector) Describe(ch chan<- *prometheus.Desc) {
	aggregatorDescs.Describe(ch)
	c.a.proposeLat.Describe(ch)
	c.a.ackLat.Describe(ch)
}

func (c aggregatorCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.Stats()
	mFetched.Emit(ch, float64(s.Fetched))
	mAcked.Emit(ch, float64(s.Acked))
	mSamples.Emit(ch, float64(s.Samples))
	mEntriesIn.Emit(ch, float64(s.EntriesIn))
	mEntriesOut.Emit(ch, float64(s.EntriesOut))
	mProposals.Emit(ch, float64(s.Proposals))
	mRejected.Emit(ch, float64(s.Rejected))
	mGaps.Emit(ch, float64(s.Gaps))
	mPending.Emit(ch, float64(s.Pending))
	for o := storage.Applied; o <= storage.Unfold; o++ {
		mDeltas.Emit(ch, float64(c.a.outcomes[o].Load()), o.String())
	}
	mDeltas.Emit(ch, float64(c.a.outcomes[0].Load()), "other")
	c.a.proposeLat.Collect(ch)
	c.a.ackLat.Collect(ch)
}
