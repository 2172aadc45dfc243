// Package fleetdbtest is a test kit: it builds synthetic fleet-scale
// profile databases for the analyses' benchmarks (analysis/report,
// analysis/pprofexport, analysis/web): many hosts × images × offsets,
// written through storage.ApplyBatches as the coordinator writes them, so
// the per-host table and the fleet roll-up are both real. It is internal to
// analysis because only the analyses' benchmarks use it; no role does.
package fleetdbtest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

// Spec shapes a database. Each host samples PerHost of the Offsets
// instruction offsets (4 bytes apart) of every image, once per event, in
// one epoch. A host's offsets are its stripe (the offsets k with k mod
// Hosts = host) topped up with random others, so that when Hosts × PerHost
// ≥ Offsets the hosts together touch every offset and the fleet roll-up
// holds every (image, offset) pair, as a fleet running the same binaries
// would. Counts are skewed toward each image's first procedures (weight
// 1/(1+procedure index), Zipf-like), so a top-N has a clear head.
type Spec struct {
	Hosts    int
	Images   int
	Offsets  int // per image
	PerHost  int // offsets each host samples per image
	ProcSize int // instructions per procedure in the images' symbol tables
	Events   []uint8
	Seed     uint64
}

// Fleet is the query benchmark: 1,000 hosts × 50 images × 10,000
// offsets, each host touching 200 offsets of every image (2% of them):
// 10^7 per-host counts per event, and a roll-up of all 500,000 (image,
// offset) pairs. (Every host at every offset would be 5×10^8 counts, too
// many to build on one small machine.)
func Fleet() Spec {
	return Spec{Hosts: 1000, Images: 50, Offsets: 10000, PerHost: 200, ProcSize: 20, Events: []uint8{0}, Seed: 1}
}

// Small is Fleet with 50 hosts: the same roll-up (every host's 200 offsets
// are exactly its stripe, so the 50 hosts cover all 500,000 pairs once) and
// 5×10^5 per-host counts. A fleet-wide query reads the roll-up, so it
// costs the same here as at full scale; a per-host query does not.
func Small() Spec {
	s := Fleet()
	s.Hosts = 50
	return s
}

// Name identifies the spec, as a directory name.
func (s Spec) Name() string {
	ev := make([]string, len(s.Events))
	for i, e := range s.Events {
		ev[i] = fmt.Sprint(e)
	}
	return fmt.Sprintf("fleet-h%d-i%d-o%d-p%d-s%d-e%s-seed%d", s.Hosts, s.Images, s.Offsets, s.PerHost, s.ProcSize, strings.Join(ev, "."), s.Seed)
}

// Counts is how many per-host counts the spec writes.
func (s Spec) Counts() int { return s.Hosts * s.Images * s.PerHost * len(s.Events) }

func (s Spec) validate() error {
	if s.Hosts <= 0 || s.Images <= 0 || s.Offsets <= 0 || s.PerHost <= 0 || s.PerHost > s.Offsets || s.ProcSize <= 0 || len(s.Events) == 0 {
		return fmt.Errorf("fleetdbtest: bad spec %+v", s)
	}
	if s.Images*s.PerHost*len(s.Events) > wire.MaxEntries {
		return fmt.Errorf("fleetdbtest: %d entries per host exceed a batch", s.Images*s.PerHost*len(s.Events))
	}
	return nil
}

// Host names host i.
func Host(i int) string { return fmt.Sprintf("host%04d", i) }

// Image is image i's key.
func Image(i int) wire.ImageKey {
	k, err := wire.NewImageKey(wire.KindBuildID, []byte(fmt.Sprintf("fleetdb-image-%04d", i)))
	if err != nil {
		panic(err)
	}
	return k
}

// textBase is where the images are linked: offset 0 is the first
// instruction, and TextStart is page-aligned, so symbolize.LoadBase is it.
const textBase = 0x120000000

// ImageRecord is image i's record: procedures "imgNN_procNNNN" of ProcSize
// instructions each, covering every offset.
func (s Spec) ImageRecord(i int) *wire.ImageRecord {
	r := &wire.ImageRecord{Version: wire.Version, Key: Image(i), Path: fmt.Sprintf("/fleet/img%02d", i),
		TextStart: textBase, TextEnd: textBase + 4*uint64(s.Offsets), Base: textBase &^ 0x1fff}
	for p := 0; p*s.ProcSize < s.Offsets; p++ {
		r.Symbols = append(r.Symbols, wire.Symbol{Name: fmt.Sprintf("img%02d_proc%04d", i, p),
			Addr: textBase + 4*uint64(p*s.ProcSize), Size: 4 * uint64(s.ProcSize)})
	}
	return r
}

// BuildStats says what Build wrote and how fast.
type BuildStats struct {
	Counts  int // per-host counts (entries applied)
	Elapsed time.Duration
}

// EntriesPerSecond is the build's ingest rate.
func (b BuildStats) EntriesPerSecond() float64 { return float64(b.Counts) / b.Elapsed.Seconds() }

// Build writes s into a new database in dir (which must not hold one):
// image records, then one batch per host, applied hostsPerCommit at a time
// with storage.ApplyBatches.
func Build(dir string, s Spec, hostsPerCommit int) (BuildStats, error) {
	if err := s.validate(); err != nil {
		return BuildStats{}, err
	}
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		return BuildStats{}, err
	}
	start := time.Now()
	for i := range s.Images {
		if err := db.PutImage(s.ImageRecord(i)); err != nil {
			db.Close()
			return BuildStats{}, err
		}
	}
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	var group []*wire.Batch
	n := 0
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		if _, err := db.ApplyBatches(group); err != nil {
			return err
		}
		group = group[:0]
		return nil
	}
	seen := make([]int, s.Offsets) // host+1 that took offset k, per image
	for h := range s.Hosts {
		b := &wire.Batch{Version: wire.FlatVersion, Host: Host(h), CPU: 0, Seq: 1, Epoch: 1,
			Entries: make([]wire.Entry, 0, s.Images*s.PerHost*len(s.Events))}
		for im := range s.Images {
			clear(seen)
			offs := make([]int, 0, s.PerHost)
			for k := h; k < s.Offsets && len(offs) < s.PerHost; k += s.Hosts {
				offs = append(offs, k)
				seen[k] = h + 1
			}
			for len(offs) < s.PerHost {
				k := r.IntN(s.Offsets)
				if seen[k] != h+1 {
					seen[k] = h + 1
					offs = append(offs, k)
				}
			}
			for _, k := range offs {
				weight := 1 + 1000/(1+k/s.ProcSize)
				for _, ev := range s.Events {
					b.Entries = append(b.Entries, wire.Entry{Image: Image(im), Offset: 4 * uint64(k), Event: ev,
						Count: 1 + uint64(r.IntN(weight))})
				}
			}
		}
		b.Normalize()
		n += len(b.Entries)
		group = append(group, b)
		if len(group) >= hostsPerCommit {
			if err := flush(); err != nil {
				db.Close()
				return BuildStats{}, err
			}
		}
	}
	if err := flush(); err != nil {
		db.Close()
		return BuildStats{}, err
	}
	if err := db.Close(); err != nil {
		return BuildStats{}, err
	}
	return BuildStats{Counts: n, Elapsed: time.Since(start)}, nil
}

// Open opens, read-only, the database of s cached under root, building it
// first if it is not there (a build interrupted before completion is
// removed and redone, and so is one of another storage schema). The
// database lives in root/<s.Name()>/db; built is nil when it was already
// there.
func Open(root string, s Spec) (db *storage.DB, built *BuildStats, err error) {
	dir := filepath.Join(root, s.Name())
	done := filepath.Join(dir, "complete")
	schema := "schema " + storage.SchemaVersion + "\n"
	mark, err := os.ReadFile(done)
	if err == nil && !strings.HasPrefix(string(mark), schema) {
		err = fs.ErrNotExist // built by another schema: rebuild
	}
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		st, err := Build(filepath.Join(dir, "db"), s, 10)
		if err != nil {
			return nil, nil, fmt.Errorf("fleetdbtest: build %s: %w", dir, err)
		}
		if err := os.WriteFile(done, []byte(fmt.Sprintf("%s%+v\n%d counts in %v\n", schema, s, st.Counts, st.Elapsed)), 0o644); err != nil {
			return nil, nil, err
		}
		built = &st
	} else if err != nil {
		return nil, nil, err
	}
	db, err = storage.Open(filepath.Join(dir, "db"), storage.Options{ReadOnly: true})
	return db, built, err
}
