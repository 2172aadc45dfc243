package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/wire"
)

// The node's metrics, read at scrape time from the daemon's books (the
// Ledger) and counters; nothing on the interrupt path is added for them.
// The drivers' own counters belong to the CPUs while the host runs, so
// their figures come through the books: what each drain reported.
var (
	mDelivered = telemetry.Counter("dcpi_node_samples_delivered_total",
		"Counter interrupts the drivers took, as of each CPU's last drain (sec. 4.2: every interrupt is one sample).")
	mPublished = telemetry.Counter("dcpi_node_samples_published_total",
		"Samples in the batches the daemon handed to the transport, attributed to an image or unknown.")
	mUnknown = telemetry.Counter("dcpi_node_samples_unknown_total",
		"Samples in published batches whose PC no loaded image covered.")
	mDropped = telemetry.Counter("dcpi_node_samples_dropped_total",
		"Samples the node reported as dropped in its batches, by drop counter (driver.overflow_full: no overflow buffer had room; node.crash_lost: a predecessor's losses).",
		"reason")
	mStackPublished = telemetry.Counter("dcpi_node_stack_samples_published_total",
		"Samples whose call stack the daemon published.")
	mStackDropped = telemetry.Counter("dcpi_node_stack_samples_dropped_total",
		"Samples whose call stack the node reported as dropped, by drop counter.", "reason")
	mBatches = telemetry.Counter("dcpi_node_batches_total", "Sample batches the daemon built and handed to the transport.")
	mEntries = telemetry.Counter("dcpi_node_batch_entries_total",
		"Entries (image, offset, event, count) in the published batches: samples over entries is the aggregation factor.")
	mImages = telemetry.Gauge("dcpi_node_images", "Distinct images the daemon has attributed samples to.")
	mDrains = telemetry.Counter("dcpi_node_drains_total",
		"Drains of the drivers by the daemon: full (every table and buffer, by IPI, sec. 4.2.3) or buffer (a filled overflow buffer).", "kind")
	mDaemon = telemetry.Counter("dcpi_node_daemon_seconds_total",
		"Host time the daemon spent attributing and publishing.")
	mEpoch = telemetry.Gauge("dcpi_node_epoch", "The epoch the node publishes into.")

	nodeDescs = telemetry.Descs{mDelivered, mPublished, mUnknown, mDropped, mStackPublished, mStackDropped,
		mBatches, mEntries, mImages, mDrains, mDaemon, mEpoch}
)

// Collector reports the node's metrics; register it once per node (label
// several nodes of one process apart with prometheus.WrapRegistererWith).
func (n *Node) Collector() prometheus.Collector { return nodeCollector{n} }

type nodeCollector struct{ n *Node }

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) { nodeDescs.Describe(ch) }

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	n.mu.Lock()
	st, booked, epoch, drains := n.books.Stats(), n.books.Booked(), n.books.Epoch(), n.drains
	n.mu.Unlock()
	mDelivered.Emit(ch, float64(booked.Delivered))
	mPublished.Emit(ch, float64(st.Samples))
	mUnknown.Emit(ch, float64(st.Unknown))
	mDropped.EmitCounts(ch, booked.Drops, wire.DropOverflowFull, wire.DropCrashLost)
	mStackPublished.Emit(ch, float64(st.StackSamples))
	mStackDropped.EmitCounts(ch, booked.StackDrops, wire.DropStackOverflowFull)
	mBatches.Emit(ch, float64(st.Batches))
	mEntries.Emit(ch, float64(st.Entries))
	mImages.Emit(ch, float64(st.Images))
	mDrains.Emit(ch, float64(drains.FullDrains), "full")
	mDrains.Emit(ch, float64(drains.BufferDrains), "buffer")
	mDaemon.Emit(ch, float64(drains.HostNanos)/1e9)
	mEpoch.Emit(ch, float64(epoch))
}
