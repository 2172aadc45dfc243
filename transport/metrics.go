package transport

import (
	"errors"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/wire"
)

// The publisher's metrics: a node's queue to JetStream, read from Stats
// at scrape time.
var (
	mAccepted = telemetry.Counter("dcpi_transport_samples_accepted_total",
		"Samples in the batches the node handed to the publisher.")
	mSamplesPublished = telemetry.Counter("dcpi_transport_samples_published_total",
		"Samples in batches JetStream acknowledged.")
	mPubDropped = telemetry.Counter("dcpi_transport_samples_dropped_total",
		"Samples the publisher dropped, by drop counter (transport.buffer_full: the queue was full while NATS was unreachable, or while the retained batches were at their bound; transport.too_large: a batch over the server's payload limit); each travels in a tombstone.",
		"reason")
	mBatchesPublished = telemetry.Counter("dcpi_transport_batches_published_total",
		"Batches JetStream acknowledged, tombstones included.")
	mBytesPublished = telemetry.Counter("dcpi_transport_published_bytes_total",
		"Encoded bytes of the batches JetStream acknowledged.")
	mTombstones = telemetry.Counter("dcpi_transport_tombstones_total",
		"Batches replaced by tombstones (same identity, no entries, samples moved to a drop counter).")
	mDupAcks = telemetry.Counter("dcpi_transport_duplicate_acks_total",
		"Acknowledgements saying the stream already held the batch (a resend after a lost acknowledgement).")
	mRetries = telemetry.Counter("dcpi_transport_publish_retries_total", "Failed publish attempts, each retried after a backoff.")
	mImages  = telemetry.Counter("dcpi_transport_images_total",
		"Image records the publisher sent: uploaded to the bucket, or present already (another node's).", "outcome")
	mQueuedBatches = telemetry.Gauge("dcpi_transport_queue_batches", "Batches waiting in the publisher's queue.")
	mQueuedSamples = telemetry.Gauge("dcpi_transport_queue_samples", "Samples in the batches waiting in the publisher's queue.")
	mQueuedBytes   = telemetry.Gauge("dcpi_transport_queue_bytes", "Bytes the queue holds, counted against its bound (MaxBufferedBytes).")
	mQueueLimit    = telemetry.Gauge("dcpi_transport_queue_limit_bytes", "The queue's bound: beyond it the oldest batches become tombstones.")
	mRetained      = telemetry.Gauge("dcpi_transport_retained_batches",
		"Batches JetStream acknowledged that the coordinator has not applied yet, kept to be sent again if NATS loses them (docs/durability.md).")
	mRetainedBytes = telemetry.Gauge("dcpi_transport_retained_bytes", "Bytes of the retained batches, counted against node.retain_mb.")
	mRepublished   = telemetry.Counter("dcpi_transport_republished_total",
		"Retained batches sent again because their stream's applied seq stood still (a lost batch, or no aggregator running).")

	publisherDescs = telemetry.Descs{mAccepted, mSamplesPublished, mPubDropped, mBatchesPublished, mBytesPublished,
		mTombstones, mDupAcks, mRetries, mImages, mQueuedBatches, mQueuedSamples, mQueuedBytes, mQueueLimit,
		mRetained, mRetainedBytes, mRepublished}
)

// Collector reports the publisher's metrics.
func (p *Publisher) Collector() prometheus.Collector { return publisherCollector{p} }

type publisherCollector struct{ p *Publisher }

func (c publisherCollector) Describe(ch chan<- *prometheus.Desc) { publisherDescs.Describe(ch) }

func (c publisherCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	mAccepted.Emit(ch, float64(s.SamplesAccepted))
	mSamplesPublished.Emit(ch, float64(s.SamplesPublished))
	mPubDropped.EmitCounts(ch, s.Drops, wire.DropBufferFull, wire.DropTooLarge)
	mBatchesPublished.Emit(ch, float64(s.BatchesPublished))
	mBytesPublished.Emit(ch, float64(s.BytesPublished))
	mTombstones.Emit(ch, float64(s.Tombstones))
	mDupAcks.Emit(ch, float64(s.DuplicateAcks))
	mRetries.Emit(ch, float64(s.Retries))
	mImages.Emit(ch, float64(s.ImagesUploaded), "uploaded")
	mImages.Emit(ch, float64(s.ImagesPresent), "present")
	mQueuedBatches.Emit(ch, float64(s.QueuedBatches))
	mQueuedSamples.Emit(ch, float64(s.QueuedSamples))
	mQueuedBytes.Emit(ch, float64(s.QueuedBytes))
	mQueueLimit.Emit(ch, float64(c.p.cfg.MaxBufferedBytes))
	mRetained.Emit(ch, float64(s.RetainedBatches))
	mRetainedBytes.Emit(ch, float64(s.RetainedBytes))
	mRepublished.Emit(ch, float64(s.Republished))
}

// The NATS server's metrics, from its own monitoring figures (Varz,
// Jsz) at scrape time.
var (
	mConns   = telemetry.Gauge("dcpi_nats_connections", "Client connections to the server.")
	mInMsgs  = telemetry.Counter("dcpi_nats_in_messages_total", "Messages the server received from clients.")
	mOutMsgs = telemetry.Counter("dcpi_nats_out_messages_total", "Messages the server sent to clients.")
	mInBytes = telemetry.Counter("dcpi_nats_in_bytes_total", "Bytes the server received from clients.")
	mOutByte = telemetry.Counter("dcpi_nats_out_bytes_total", "Bytes the server sent to clients.")
	mSlow    = telemetry.Counter("dcpi_nats_slow_consumers_total", "Clients the server cut off for reading too slowly.")
	mJSMsgs  = telemetry.Gauge("dcpi_jetstream_messages", "Messages JetStream holds in every stream (batches not yet acknowledged by an aggregator, and image records).")
	mJSBytes = telemetry.Gauge("dcpi_jetstream_stored_bytes", "Bytes JetStream stores, memory and file.")
	mJSCons  = telemetry.Gauge("dcpi_jetstream_consumers", "JetStream consumers (the aggregators' durable consumer among them).")

	serverDescs = telemetry.Descs{mConns, mInMsgs, mOutMsgs, mInBytes, mOutByte, mSlow, mJSMsgs, mJSBytes, mJSCons}
)

// Collector reports the server's metrics.
func (s *Server) Collector() prometheus.Collector { return serverCollector{s} }

type serverCollector struct{ s *Server }

func (c serverCollector) Describe(ch chan<- *prometheus.Desc) { serverDescs.Describe(ch) }

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	v, err := c.s.ns.Varz(nil)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(mConns.Desc(), err)
		return
	}
	mConns.Emit(ch, float64(v.Connections))
	mInMsgs.Emit(ch, float64(v.InMsgs))
	mOutMsgs.Emit(ch, float64(v.OutMsgs))
	mInBytes.Emit(ch, float64(v.InBytes))
	mOutByte.Emit(ch, float64(v.OutBytes))
	mSlow.Emit(ch, float64(v.SlowConsumers))
	js, err := c.s.ns.Jsz(&server.JSzOptions{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(mJSMsgs.Desc(), err)
		return
	}
	mJSMsgs.Emit(ch, float64(js.Messages))
	mJSBytes.Emit(ch, float64(js.Store+js.Memory))
	mJSCons.Emit(ch, float64(js.Consumers))
}

// Ready says whether the server runs with JetStream on, for a readiness
// check (StartServer returns once it accepts clients).
func (s *Server) Ready() error {
	if !s.ns.Running() {
		return errors.New("not running")
	}
	if !s.ns.JetStreamEnabled() {
		return errors.New("JetStream is not enabled")
	}
	return nil
}
