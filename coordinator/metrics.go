package coordinator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/storage"
	"dcpi/wire/coordproto"
)

// replicaMetrics are the latencies a replica observes as it works (once
// per request, proposal or applied group of log entries, never per
// sample); everything else is read at scrape time (Collector).
type replicaMetrics struct {
	request *prometheus.HistogramVec // by kind and request
	commit  prometheus.Histogram     // a proposal, from raft.Apply to applied here
	apply   prometheus.Histogram     // the FSM's apply of one group of entries
	refused *prometheus.CounterVec   // host requests naming another host than their subject's
	// requests whose reply subject is no inbox (coordproto.IsReplyInbox)
	badReply *prometheus.CounterVec
	// the leader's scheduled cuts, by result (cut, superseded)
	scheduledCuts *prometheus.CounterVec
	// Raft connections whose TLS handshake failed (tlsStreamLayer)
	raftRefused prometheus.Counter
	// epochs the leader's retention commands merged away or expired
	retention *prometheus.CounterVec
}

func newReplicaMetrics() *replicaMetrics {
	m := &replicaMetrics{
		request: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dcpi_coordinator_request_seconds",
			Help: "Requests served over NATS, from receipt to reply, by kind (query: any replica; lquery: linearizable, on the leader; " +
				"command: the leader's proposals and liveness) and request.",
			Buckets: telemetry.LatencyBuckets}, []string{"kind", "request"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dcpi_coordinator_raft_commit_seconds",
			Help:    "A command proposed on the leader: from raft.Apply to its commit by a quorum and its apply here.",
			Buckets: telemetry.LatencyBuckets}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dcpi_coordinator_fsm_apply_seconds",
			Help:    "The state machine's apply of one group of committed log entries (one Pebble batch for a group of ingests).",
			Buckets: telemetry.LatencyBuckets}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcpi_coordinator_requests_refused_total",
			Help: "Requests about a host (registration, heartbeat, epoch ack, applied sequences) refused because their body names " +
				"another host than their subject, by kind and request: a host's credentials acting for another host."},
			[]string{"kind", "request"}),
		badReply: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcpi_coordinator_requests_bad_reply_total",
			Help: "Requests refused unserved because their reply subject is no inbox: answering would publish, on the coordinator's " +
				"credentials, where the requester chose (a cut, a stream's deletion, another host's batches). By kind and request."},
			[]string{"kind", "request"}),
		scheduledCuts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcpi_coordinator_scheduled_cuts_total",
			Help: "Scheduled epoch cuts (the epoch's period, epoch_every, was up) this replica applied, by result: cut, or " +
				"superseded (the epoch was cut already, by hand or by an earlier proposal, and nothing changed). Every replica " +
				"counts the same."},
			[]string{"result"}),
		raftRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "dcpi_coordinator_raft_handshakes_refused_total",
			Help: "Connections to the Raft port refused at the TLS handshake: no certificate, or one the Raft CA did not sign " +
				"for a replica. Always 0 with plain TCP Raft."}),
		retention: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dcpi_coordinator_retention_epochs_total",
			Help: "Epochs the retention commands this replica applied removed, by action: merged (folded into an earlier " +
				"epoch of their window) or expired (deleted, what they held counted as expired). Every replica counts the same."},
			[]string{"action"}),
	}
	for _, a := range []string{"merged", "expired"} {
		m.retention.WithLabelValues(a)
	}
	for _, res := range []string{"cut", "superseded"} {
		m.scheduledCuts.WithLabelValues(res) // a scrape shows 0, not no series
	}
	return m
}

// requestLabels names a request subject for the metrics: its kind (query,
// lquery, command) and its request (the query kind, or the command).
func requestLabels(subject string) (kind, request string) {
	// A host request is subscribed as base.*: label it as its base.
	subject = strings.TrimSuffix(subject, ".*")
	rest := strings.TrimPrefix(subject, "dcpi.coord.")
	switch {
	case strings.HasPrefix(subject, coordproto.SubjectQuery):
		return "query", strings.TrimPrefix(subject, coordproto.SubjectQuery)
	case strings.HasPrefix(subject, coordproto.SubjectLinearQuery):
		return "lquery", strings.TrimPrefix(subject, coordproto.SubjectLinearQuery)
	case strings.HasPrefix(subject, coordproto.SubjectReplica):
		// replica.<id>.query.<kind>: a query addressed to this replica.
		if i := strings.LastIndex(subject, ".query."); i >= 0 {
			return "query", subject[i+len(".query."):]
		}
	}
	return "command", rest
}

// timedFSM is the FSM as Raft calls it, timing each apply.
type timedFSM struct {
	*FSM
	apply prometheus.Histogram
}

func (t timedFSM) Apply(l *raft.Log) any {
	start := time.Now()
	defer func() { t.apply.Observe(time.Since(start).Seconds()) }()
	return t.FSM.Apply(l)
}

func (t timedFSM) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	defer func() { t.apply.Observe(time.Since(start).Seconds()) }()
	return t.FSM.ApplyBatch(logs)
}

var _ raft.BatchingFSM = timedFSM{}

// The replica's gauges and counters, read at scrape time from Raft, the
// FSM and the database.
var (
	mRaftState = telemetry.Gauge("dcpi_coordinator_raft_state",
		"1 for the replica's Raft state (follower, candidate, leader, shutdown), 0 for the others.", "state")
	mRaftTerm     = telemetry.Gauge("dcpi_coordinator_raft_term", "The replica's current Raft term.")
	mRaftLast     = telemetry.Gauge("dcpi_coordinator_raft_last_index", "Index of the last entry in the replica's Raft log.")
	mRaftCommit   = telemetry.Gauge("dcpi_coordinator_raft_commit_index", "The highest log index the replica knows committed.")
	mRaftApplied  = telemetry.Gauge("dcpi_coordinator_raft_applied_index", "The highest log index Raft has handed the state machine.")
	mDBApplied    = telemetry.Gauge("dcpi_coordinator_db_applied_index", "The log index the profile database reflects (written in the same Pebble batch as the entries' effects).")
	mSnapIndex    = telemetry.Gauge("dcpi_coordinator_raft_last_snapshot_index", "Log index of the replica's newest snapshot (0: none).")
	mSnapTerm     = telemetry.Gauge("dcpi_coordinator_raft_last_snapshot_term", "Term of the replica's newest snapshot.")
	mPeers        = telemetry.Gauge("dcpi_coordinator_raft_peers", "Other voters in the replica's latest Raft configuration.")
	mLeaderKnown  = telemetry.Gauge("dcpi_coordinator_raft_leader_known", "1 if the replica knows a leader, 0 if not.")
	mContactAge   = telemetry.Gauge("dcpi_coordinator_raft_last_contact_seconds", "Time since a follower last heard from the leader (0 on the leader).")
	mEpochs       = telemetry.Gauge("dcpi_coordinator_epochs", "Epochs by state (open, closing, sealed).", "state")
	mEpochCurrent = telemetry.Gauge("dcpi_coordinator_epoch", "The newest epoch: the one nodes publish into.")

	replicaDescs = telemetry.Descs{mRaftState, mRaftTerm, mRaftLast, mRaftCommit, mRaftApplied, mDBApplied, mSnapIndex,
		mSnapTerm, mPeers, mLeaderKnown, mContactAge, mEpochs, mEpochCurrent}
)

// Collector reports the replica's metrics: Raft's state and indexes,
// epochs, the latencies it observed, and its database's (storage's
// collector: samples stored and dropped, and Pebble's figures).
func (r *Replica) Collector() prometheus.Collector {
	return replicaCollector{r: r, db: storage.NewCollector(r.fsm.View)}
}

type replicaCollector struct {
	r  *Replica
	db prometheus.Collector
}

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	replicaDescs.Describe(ch)
	c.r.metrics.request.Describe(ch)
	c.r.metrics.commit.Describe(ch)
	c.r.metrics.apply.Describe(ch)
	c.r.metrics.refused.Describe(ch)
	c.r.metrics.badReply.Describe(ch)
	c.r.metrics.scheduledCuts.Describe(ch)
	c.r.metrics.raftRefused.Describe(ch)
	c.r.metrics.retention.Describe(ch)
	c.db.Describe(ch)
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	rf := r.raft
	state := rf.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == state {
			v = 1
		}
		mRaftState.Emit(ch, v, strings.ToLower(s.String()))
	}
	mRaftTerm.Emit(ch, float64(rf.CurrentTerm()))
	mRaftLast.Emit(ch, float64(rf.LastIndex()))
	mRaftCommit.Emit(ch, float64(rf.CommitIndex()))
	mRaftApplied.Emit(ch, float64(rf.AppliedIndex()))
	mDBApplied.Emit(ch, float64(r.fsm.AppliedIndex()))
	st := rf.Stats()
	mSnapIndex.Emit(ch, parseStat(st["last_snapshot_index"]))
	mSnapTerm.Emit(ch, parseStat(st["last_snapshot_term"]))
	mPeers.Emit(ch, parseStat(st["num_peers"]))
	leader := 0.0
	if r.LeaderID() != "" {
		leader = 1
	}
	mLeaderKnown.Emit(ch, leader)
	age := 0.0
	if state != raft.Leader {
		if t := rf.LastContact(); !t.IsZero() {
			age = time.Since(t).Seconds()
		}
	}
	mContactAge.Emit(ch, age)
	err := r.fsm.View(func(db *storage.DB) error {
		eps, err := db.Epochs()
		if err != nil {
			return err
		}
		by := map[storage.EpochState]int{}
		newest := uint64(0)
		for _, e := range eps {
			by[e.State]++
			newest = max(newest, e.Number)
		}
		for _, s := range []storage.EpochState{storage.EpochOpen, storage.EpochClosing, storage.EpochSealed} {
			mEpochs.Emit(ch, float64(by[s]), s.String())
		}
		mEpochCurrent.Emit(ch, float64(newest))
		return nil
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(mEpochs.Desc(), err)
	}
	r.metrics.request.Collect(ch)
	r.metrics.commit.Collect(ch)
	r.metrics.apply.Collect(ch)
	r.metrics.refused.Collect(ch)
	r.metrics.badReply.Collect(ch)
	r.metrics.scheduledCuts.Collect(ch)
	r.metrics.raftRefused.Collect(ch)
	r.metrics.retention.Collect(ch)
	c.db.Collect(ch)
}

// parseStat reads one of raft.Stats' decimal figures (0 if absent).
func parseStat(s string) float64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return float64(v)
}

// Ready says whether the replica can serve: not shut down, its database
// open, a Raft leader known, and everything it knows committed applied
// (a replica catching up after a restart, or receiving a snapshot, is not
// ready). It is cheap and never blocks, for /readyz.
func (r *Replica) Ready() error {
	select {
	case <-r.stop:
		return errors.New("shut down")
	default:
	}
	if err := r.Err(); err != nil {
		return err
	}
	if err := r.fsm.View(func(db *storage.DB) error { return db.Usable() }); err != nil {
		return fmt.Errorf("profile database: %w", err)
	}
	if r.LeaderID() == "" {
		return errors.New("no Raft leader known")
	}
	if applied, commit := r.raft.AppliedIndex(), r.raft.CommitIndex(); applied < commit {
		return fmt.Errorf("catching up: log applied to %d of %d committed", applied, commit)
	}
	return nil
}

// countApplied counts what the scheduled cuts and retention commands this
// replica applied did (FSM.OnApplied). Counted at the apply, not where
// the leader proposed, so a day's merge that outlives the leader's wait
// is counted all the same, and every replica's count agrees.
func (r *Replica) countApplied(_ Command, res any) {
	if r.metrics == nil {
		return
	}
	switch out := res.(type) {
	case ScheduledCutResult:
		if out.Opened != 0 {
			r.metrics.scheduledCuts.WithLabelValues("cut").Inc()
		} else {
			r.metrics.scheduledCuts.WithLabelValues("superseded").Inc()
		}
	case MergeResult:
		if out.Parts > 1 {
			r.metrics.retention.WithLabelValues("merged").Add(float64(out.Parts - 1))
		}
	case ExpireResult:
		if out.Epochs > 0 {
			r.metrics.retention.WithLabelValues("expired").Add(float64(out.Epochs))
		}
	}
}
