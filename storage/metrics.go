package storage

import (
	"github.com/prometheus/client_golang/prometheus"

	"dcpi/internal/telemetry"
	"dcpi/wire"
)

// EngineStats are a few of Pebble's figures that say how the engine
// fares: space, read amplification, the LSM's shape and its background
// work.
type EngineStats struct {
	DiskBytes              uint64 // every file the database has on disk
	TableBytes             uint64 // the LSM's live sstables: the data, without the WAL or files awaiting deletion
	WALBytes               uint64 // the write-ahead log's files, live and obsolete
	ObsoleteBytes          uint64 // sstables compacted away and not yet deleted
	ZombieBytes            uint64 // sstables compacted away that an open reader (iterator, snapshot) still holds
	ReadAmp                int    // sublevels a read may consult
	Tables, L0Tables       int64  // sstables in the LSM, and in L0
	L0Sublevels            int32
	Compactions            int64  // compactions finished since open
	CompactionDebt         uint64 // bytes compactions owe before the LSM is in shape
	Flushes                int64  // memtable flushes since open
	MemTableBytes          uint64 // allocated by memtables
	WALBytesWritten        uint64 // logical bytes written to the WAL since open
	CacheHits, CacheMisses int64
}

// Usable returns nil while the database is open and no read has found a
// damaged file (ErrClosed after Close; Damaged's error after damage),
// for a readiness check.
func (db *DB) Usable() error {
	if err := db.use(false); err != nil {
		return err
	}
	db.mu.RUnlock()
	return db.Damaged()
}

// EngineStats returns the engine's figures.
func (db *DB) EngineStats() (EngineStats, error) {
	if err := db.use(false); err != nil {
		return EngineStats{}, err
	}
	defer db.mu.RUnlock()
	m := db.pdb.Metrics()
	return EngineStats{DiskBytes: m.DiskSpaceUsage(), TableBytes: uint64(m.Total().TablesSize),
		WALBytes: m.WAL.PhysicalSize + m.WAL.ObsoletePhysicalSize, ObsoleteBytes: m.Table.Local.ObsoleteSize, ZombieBytes: m.Table.Local.ZombieSize, ReadAmp: m.ReadAmp(), Tables: m.Total().TablesCount,
		L0Tables: m.Levels[0].TablesCount, L0Sublevels: m.Levels[0].Sublevels, Compactions: m.Compact.Count,
		CompactionDebt: m.Compact.EstimatedDebt, Flushes: m.Flush.Count, MemTableBytes: m.MemTable.Size,
		WALBytesWritten: m.WAL.BytesWritten, CacheHits: m.BlockCache.Hits, CacheMisses: m.BlockCache.Misses}, nil
}

// The database's metrics: the stored side of the conservation identity
// (samples stored and every drop counter, from the summary and drop
// tables, not a scan of the profiles) and the engine's figures.
var (
	mStored = telemetry.Counter("dcpi_storage_samples_stored_total",
		"Samples in the profile database, attributed to an image or unknown (no image covered the PC).", "attribution")
	mDropped = telemetry.Counter("dcpi_storage_samples_dropped_total",
		"Samples the database counts as dropped, by drop counter (the name says where: driver, transport, node).", "reason")
	mStackStored = telemetry.Counter("dcpi_storage_stack_samples_stored_total",
		"Samples whose call stack the database holds.")
	mStackDropped = telemetry.Counter("dcpi_storage_stack_samples_dropped_total",
		"Samples whose call stack was dropped, by drop counter.", "reason")
	mExpired = telemetry.Counter("dcpi_storage_samples_expired_total",
		"Samples stored or dropped in epochs the retention policy deleted, by view (flat, stacks, profileme): "+
			"generated = stored + dropped + expired.", "view")
	mDisk        = telemetry.Gauge("dcpi_storage_disk_usage_bytes", "Bytes of every file of the Pebble database.")
	mReadAmp     = telemetry.Gauge("dcpi_storage_read_amplification", "Sublevels of the LSM a read may consult.")
	mTables      = telemetry.Gauge("dcpi_storage_sstables", "Sstables in the LSM.")
	mL0Tables    = telemetry.Gauge("dcpi_storage_l0_sstables", "Sstables in L0.")
	mL0Sub       = telemetry.Gauge("dcpi_storage_l0_sublevels", "Sublevels of L0 (writes stall as they grow).")
	mCompactions = telemetry.Counter("dcpi_storage_compactions_total", "Compactions finished since the database opened.")
	mDebt        = telemetry.Gauge("dcpi_storage_compaction_debt_bytes", "Bytes compactions owe before the LSM is in shape.")
	mFlushes     = telemetry.Counter("dcpi_storage_flushes_total", "Memtable flushes since the database opened.")
	mMemTable    = telemetry.Gauge("dcpi_storage_memtable_bytes", "Bytes allocated by memtables.")
	mWAL         = telemetry.Counter("dcpi_storage_wal_written_bytes_total", "Bytes written to Pebble's write-ahead log since the database opened.")
	mCache       = telemetry.Counter("dcpi_storage_block_cache_lookups_total", "Block cache lookups, by result (hit, miss).", "result")

	storageDescs = telemetry.Descs{mStored, mDropped, mStackStored, mStackDropped, mExpired, mDisk, mReadAmp, mTables, mL0Tables, mL0Sub,
		mCompactions, mDebt, mFlushes, mMemTable, mWAL, mCache}
)

// NewCollector reports the metrics of the database view hands it (the
// coordinator's current one: a restored snapshot replaces it). A read
// that fails makes the scrape fail, rather than report counters that
// seem to have gone back to zero.
func NewCollector(view func(fn func(db *DB) error) error) prometheus.Collector {
	return dbCollector{view}
}

type dbCollector struct {
	view func(fn func(db *DB) error) error
}

func (c dbCollector) Describe(ch chan<- *prometheus.Desc) { storageDescs.Describe(ch) }

func (c dbCollector) Collect(ch chan<- prometheus.Metric) {
	err := c.view(func(db *DB) error {
		samples, unknown, drops, err := db.Totals(Query{})
		if err != nil {
			return err
		}
		stackSamples, stackDrops, err := db.StackTotals(Query{})
		if err != nil {
			return err
		}
		expired, err := db.ExpiredTotals(Query{})
		if err != nil {
			return err
		}
		es, err := db.EngineStats()
		if err != nil {
			return err
		}
		mStored.Emit(ch, float64(samples), "image")
		mStored.Emit(ch, float64(unknown), "unknown")
		mDropped.EmitCounts(ch, drops, wire.DropOverflowFull, wire.DropBufferFull, wire.DropTooLarge, wire.DropCrashLost)
		mStackStored.Emit(ch, float64(stackSamples))
		mStackDropped.EmitCounts(ch, stackDrops, wire.DropStackOverflowFull)
		mExpired.Emit(ch, float64(expired.Samples), "flat")
		mExpired.Emit(ch, float64(expired.StackSamples), "stacks")
		mExpired.Emit(ch, float64(expired.MeSamples), "profileme")
		mDisk.Emit(ch, float64(es.DiskBytes))
		mReadAmp.Emit(ch, float64(es.ReadAmp))
		mTables.Emit(ch, float64(es.Tables))
		mL0Tables.Emit(ch, float64(es.L0Tables))
		mL0Sub.Emit(ch, float64(es.L0Sublevels))
		mCompactions.Emit(ch, float64(es.Compactions))
		mDebt.Emit(ch, float64(es.CompactionDebt))
		mFlushes.Emit(ch, float64(es.Flushes))
		mMemTable.Emit(ch, float64(es.MemTableBytes))
		mWAL.Emit(ch, float64(es.WALBytesWritten))
		mCache.Emit(ch, float64(es.CacheHits), "hit")
		mCache.Emit(ch, float64(es.CacheMisses), "miss")
		return nil
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(mStored.Desc(), err)
	}
}
