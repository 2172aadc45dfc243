package storage

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"dcpi/internal/bincodec"
	"dcpi/wire"
)

// Path profile tables (doc.go has the schema).
const (
	tPathUploads = 'U' // host\0 uploadID → upload record
	tPathFleet   = 'W' // source image → merged wire.PathProfile of every host
	tPathHosts   = 'V' // source image host\0 → merged wire.PathProfile of one host
)

const pathUploadRecordVersion = 1

// PathStatus is what applying a path upload did.
type PathStatus uint8

// Path upload outcomes.
const (
	// PathApplied: the upload's counts and tree were merged.
	PathApplied PathStatus = 1
	// PathDuplicate: the (host, upload ID) was seen before; nothing
	// changed. The outcome's Reason repeats a refusal recorded then.
	PathDuplicate PathStatus = 2
	// PathRefused: the upload does not merge with what is stored (other
	// metric names, another path numbering of a procedure); it was
	// recorded as refused, with Reason, and nothing of it merged.
	PathRefused PathStatus = 3
)

func (s PathStatus) String() string {
	switch s {
	case PathApplied:
		return "applied"
	case PathDuplicate:
		return "duplicate"
	case PathRefused:
		return "refused"
	}
	return fmt.Sprintf("PathStatus(%d)", uint8(s))
}

// PathOutcome is ApplyPathUpload's result.
type PathOutcome struct {
	Status PathStatus
	Reason string // why it was refused (now, or when first applied)
}

// PathUploadRecord is what storage keeps of an applied or refused upload,
// so that its redelivery changes nothing.
type PathUploadRecord struct {
	Host    string
	ID      wire.UploadID
	Image   wire.ImageKey
	Source  wire.PathSource
	Refused string // empty: applied
}

func pathUploadKey(host string, id wire.UploadID) []byte {
	return append(appendHost([]byte{tPathUploads}, host), id[:]...)
}

func pathFleetKey(src wire.PathSource, image wire.ImageKey) []byte {
	return append([]byte{tPathFleet, byte(src)}, image[:]...)
}

func pathHostKey(src wire.PathSource, image wire.ImageKey, host string) []byte {
	return appendHost(append([]byte{tPathHosts, byte(src)}, image[:]...), host)
}

func encodePathUploadRecord(r *PathUploadRecord) []byte {
	b := []byte{pathUploadRecordVersion, byte(r.Source)}
	b = append(b, r.Image[:]...)
	return bincodec.AppendString(b, r.Refused)
}

func decodePathUploadRecord(host string, id wire.UploadID, v []byte) (PathUploadRecord, error) {
	r := PathUploadRecord{Host: host, ID: id}
	d := bincodec.NewDecoder(v, 0)
	if ver := d.Byte("version"); d.Err() == nil && ver != pathUploadRecordVersion {
		return r, fmt.Errorf("%w: path upload record version %d", ErrCorrupt, ver)
	}
	r.Source = wire.PathSource(d.Byte("source"))
	copy(r.Image[:], d.Bytes("image", len(r.Image)))
	r.Refused = d.String("reason", 1<<16)
	d.End()
	if err := d.Err(); err != nil {
		return r, fmt.Errorf("%w: path upload record: %w", ErrCorrupt, err)
	}
	return r, nil
}

// ApplyPathUpload applies u on its own: ApplyPathUploadWith without Meta.
func (db *DB) ApplyPathUpload(u *wire.PathUpload) (PathOutcome, error) {
	return db.ApplyPathUploadWith(u, nil)
}

// ApplyPathUploadWith applies a path upload, and m's writes (if m is not
// nil), in one Pebble batch. A (host, upload ID) seen before is a
// duplicate and changes nothing but m. Otherwise u's profile is merged
// into the fleet's profile of (source, image) and into its host's
// (MergePathProfiles); if either refuses, the upload is recorded as
// refused, with the reason, and nothing of it is merged. Oracle and
// instrumented uploads are kept apart by the source in every key.
func (db *DB) ApplyPathUploadWith(u *wire.PathUpload, m *Meta) (PathOutcome, error) {
	if err := u.Validate(); err != nil {
		return PathOutcome{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := db.use(true); err != nil {
		return PathOutcome{}, err
	}
	defer db.mu.RUnlock()
	ukey := pathUploadKey(u.Host, u.ID)
	out, writes, err := db.decidePathUpload(u, ukey)
	if err != nil {
		return PathOutcome{}, fmt.Errorf("storage: apply path upload: %w", err)
	}
	pb := db.pdb.NewBatch()
	defer pb.Close()
	for _, w := range writes {
		if err := pb.Set(w.key, w.val, nil); err != nil {
			return PathOutcome{}, fmt.Errorf("storage: apply path upload: %w", err)
		}
	}
	if m != nil {
		for _, op := range m.ops {
			if err := pb.Set(op.key, op.val, nil); err != nil {
				return PathOutcome{}, fmt.Errorf("storage: apply path upload: %w", err)
			}
		}
	}
	if pb.Empty() {
		return out, nil
	}
	if err := db.commit(pb); err != nil {
		return PathOutcome{}, fmt.Errorf("storage: apply path upload: %w", err)
	}
	return out, nil
}

// decidePathUpload reads what u merges with and returns its outcome and
// writes. The caller holds db.mu.
func (db *DB) decidePathUpload(u *wire.PathUpload, ukey []byte) (PathOutcome, []metaOp, error) {
	if v, ok, err := db.get(ukey); err != nil {
		return PathOutcome{}, nil, err
	} else if ok {
		r, err := decodePathUploadRecord(u.Host, u.ID, v)
		if err != nil {
			return PathOutcome{}, nil, err
		}
		return PathOutcome{Status: PathDuplicate, Reason: r.Refused}, nil, nil
	}
	rec := PathUploadRecord{Host: u.Host, ID: u.ID, Image: u.Image, Source: u.Source}
	var writes []metaOp
	for _, key := range [][]byte{pathFleetKey(u.Source, u.Image), pathHostKey(u.Source, u.Image, u.Host)} {
		stored, err := db.storedPathProfile(key)
		if err != nil {
			return PathOutcome{}, nil, err
		}
		merged, err := MergePathProfiles(stored, &u.Profile)
		if err != nil {
			rec.Refused = err.Error()
			break
		}
		v, err := merged.MarshalBinary()
		if err != nil {
			// A merge of two valid profiles can exceed the message cap.
			rec.Refused = err.Error()
			break
		}
		writes = append(writes, metaOp{key, v})
	}
	out := PathOutcome{Status: PathApplied}
	if rec.Refused != "" {
		writes = nil
		out = PathOutcome{Status: PathRefused, Reason: rec.Refused}
	}
	writes = append(writes, metaOp{ukey, encodePathUploadRecord(&rec)})
	return out, writes, nil
}

// storedPathProfile reads a merged profile; nil if there is none. The
// caller holds db.mu.
func (db *DB) storedPathProfile(key []byte) (*wire.PathProfile, error) {
	v, ok, err := db.get(key)
	if err != nil || !ok {
		return nil, err
	}
	var p wire.PathProfile
	if err := p.UnmarshalBinary(v); err != nil {
		return nil, fmt.Errorf("%w: path profile %x: %w", ErrCorrupt, key, err)
	}
	return &p, nil
}

// MergePathProfiles returns the sum of two profiles of one image (a nil a
// is the empty profile): path counts and metrics summed per (procedure,
// path ID), unknown activations summed, calling context trees merged as
// cct.Merge does (records with the same chain of keys add their metrics
// and path tallies; backedges are united). It refuses, changing nothing,
// profiles whose path or tree metric names differ, or that number a
// procedure with different path counts (another build, or another
// numbering). The first non-empty image path and procedure name are kept.
func MergePathProfiles(a, b *wire.PathProfile) (*wire.PathProfile, error) {
	if a == nil {
		c := *b
		return &c, nil
	}
	if !slices.Equal(a.PathMetrics, b.PathMetrics) {
		return nil, fmt.Errorf("path metrics %v, stored %v", b.PathMetrics, a.PathMetrics)
	}
	if len(a.Tree) > 0 && len(b.Tree) > 0 && !slices.Equal(a.TreeMetrics, b.TreeMetrics) {
		return nil, fmt.Errorf("tree metrics %v, stored %v", b.TreeMetrics, a.TreeMetrics)
	}
	out := &wire.PathProfile{ImagePath: cmp.Or(a.ImagePath, b.ImagePath), PathMetrics: a.PathMetrics}
	i, j := 0, 0
	for i < len(a.Procs) || j < len(b.Procs) {
		switch {
		case j == len(b.Procs) || i < len(a.Procs) && a.Procs[i].Entry < b.Procs[j].Entry:
			out.Procs = append(out.Procs, a.Procs[i])
			i++
		case i == len(a.Procs) || b.Procs[j].Entry < a.Procs[i].Entry:
			out.Procs = append(out.Procs, b.Procs[j])
			j++
		default:
			p, err := mergeProc(&a.Procs[i], &b.Procs[j])
			if err != nil {
				return nil, err
			}
			out.Procs = append(out.Procs, p)
			i, j = i+1, j+1
		}
	}
	switch {
	case len(a.Tree) == 0:
		out.TreeMetrics, out.Tree = b.TreeMetrics, b.Tree
	case len(b.Tree) == 0:
		out.TreeMetrics, out.Tree = a.TreeMetrics, a.Tree
	default:
		out.TreeMetrics, out.Tree = a.TreeMetrics, mergeTrees(a.Tree, b.Tree)
	}
	return out, nil
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}

func addInto(dst, src []uint64) {
	for k, v := range src {
		dst[k] = satAdd(dst[k], v)
	}
}

func mergeProc(a, b *wire.PathProc) (wire.PathProc, error) {
	if a.NumPaths != b.NumPaths {
		return wire.PathProc{}, fmt.Errorf("procedure %#x numbered with %d paths, stored %d", a.Entry, b.NumPaths, a.NumPaths)
	}
	p := wire.PathProc{Entry: a.Entry, Name: cmp.Or(a.Name, b.Name), NumPaths: a.NumPaths, Unknown: satAdd(a.Unknown, b.Unknown)}
	i, j := 0, 0
	for i < len(a.Paths) || j < len(b.Paths) {
		switch {
		case j == len(b.Paths) || i < len(a.Paths) && a.Paths[i].ID < b.Paths[j].ID:
			p.Paths = append(p.Paths, a.Paths[i])
			i++
		case i == len(a.Paths) || b.Paths[j].ID < a.Paths[i].ID:
			p.Paths = append(p.Paths, b.Paths[j])
			j++
		default:
			r := wire.PathRun{ID: a.Paths[i].ID, Count: satAdd(a.Paths[i].Count, b.Paths[j].Count), Metrics: slices.Clone(a.Paths[i].Metrics)}
			addInto(r.Metrics, b.Paths[j].Metrics)
			p.Paths = append(p.Paths, r)
			i, j = i+1, j+1
		}
	}
	return p, nil
}

// treeRec is a record of a tree being merged.
type treeRec struct {
	key     [2]uint64 // call site, procedure: the sibling order
	kids    map[[2]uint64]*treeRec
	metrics []uint64
	paths   map[uint64]uint64
	backs   map[treeBack]bool
}

type treeBack struct {
	site uint64
	to   *treeRec
}

// mergeTrees merges two valid trees of the same metrics into one in
// canonical order.
func mergeTrees(a, b []wire.TreeNode) []wire.TreeNode {
	root := &treeRec{kids: map[[2]uint64]*treeRec{}, metrics: make([]uint64, len(a[0].Metrics))}
	add := func(t []wire.TreeNode) {
		recs := make([]*treeRec, len(t))
		for i := range t {
			n := &t[i]
			r := root
			if i > 0 {
				parent := recs[n.Parent]
				k := [2]uint64{n.CallSite, n.Proc}
				if r = parent.kids[k]; r == nil {
					r = &treeRec{key: k, kids: map[[2]uint64]*treeRec{}, metrics: make([]uint64, len(n.Metrics))}
					parent.kids[k] = r
				}
			}
			recs[i] = r
			addInto(r.metrics, n.Metrics)
			for _, pt := range n.Paths {
				if r.paths == nil {
					r.paths = map[uint64]uint64{}
				}
				r.paths[pt.ID] = satAdd(r.paths[pt.ID], pt.Count)
			}
		}
		for i := range t {
			for _, be := range t[i].Recursive {
				if recs[i].backs == nil {
					recs[i].backs = map[treeBack]bool{}
				}
				recs[i].backs[treeBack{be.CallSite, recs[be.To]}] = true
			}
		}
	}
	add(a)
	add(b)
	var out []wire.TreeNode
	index := map[*treeRec]int{}
	var order []*treeRec
	var walk func(r *treeRec, parent int)
	walk = func(r *treeRec, parent int) {
		i := len(out)
		index[r] = i
		order = append(order, r)
		n := wire.TreeNode{Parent: parent, CallSite: r.key[0], Proc: r.key[1], Metrics: r.metrics}
		for _, id := range slices.Sorted(maps.Keys(r.paths)) {
			n.Paths = append(n.Paths, wire.PathTally{ID: id, Count: r.paths[id]})
		}
		out = append(out, n)
		keys := slices.SortedFunc(maps.Keys(r.kids), func(x, y [2]uint64) int {
			if c := cmp.Compare(x[0], y[0]); c != 0 {
				return c
			}
			return cmp.Compare(x[1], y[1])
		})
		for _, k := range keys {
			walk(r.kids[k], i)
		}
	}
	walk(root, 0)
	for i, r := range order {
		for be := range r.backs {
			out[i].Recursive = append(out[i].Recursive, wire.TreeBackedge{CallSite: be.site, To: index[be.to]})
		}
		slices.SortFunc(out[i].Recursive, func(x, y wire.TreeBackedge) int {
			if c := cmp.Compare(x.CallSite, y.CallSite); c != 0 {
				return c
			}
			return cmp.Compare(x.To, y.To)
		})
	}
	return out
}

// PathImage is one (source, image) with a merged path profile.
type PathImage struct {
	Source    wire.PathSource
	Image     wire.ImageKey
	ImagePath string
	Hosts     []string // that uploaded it, sorted
}

// PathImages lists the images with path profiles of source (0: every
// source), by source then image.
func (db *DB) PathImages(src wire.PathSource) ([]PathImage, error) {
	prefix := []byte{tPathFleet}
	if src != 0 {
		prefix = append(prefix, byte(src))
	}
	var out []PathImage
	err := db.scanPrefix(prefix, func(k, v []byte) error {
		if len(k) != 2+keyLen {
			return fmt.Errorf("%w: path profile key %x", ErrCorrupt, k)
		}
		im := PathImage{Source: wire.PathSource(k[1])}
		copy(im.Image[:], k[2:])
		var p wire.PathProfile
		if err := p.UnmarshalBinary(v); err != nil {
			return fmt.Errorf("%w: path profile %x: %w", ErrCorrupt, k, err)
		}
		im.ImagePath = p.ImagePath
		out = append(out, im)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: path images: %w", err)
	}
	for i := range out {
		hp := append([]byte{tPathHosts, byte(out[i].Source)}, out[i].Image[:]...)
		err := db.scanPrefix(hp, func(k, _ []byte) error {
			if len(k) < len(hp)+2 || k[len(k)-1] != 0 {
				return fmt.Errorf("%w: path profile key %x", ErrCorrupt, k)
			}
			out[i].Hosts = append(out[i].Hosts, string(k[len(hp):len(k)-1]))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("storage: path images: %w", err)
		}
	}
	return out, nil
}

// PathProfile returns the merged path profile of (source, image): over
// every host when hosts is nil, else over the named hosts (merged here;
// hosts without uploads add nothing). ErrNotFound if nothing was merged.
func (db *DB) PathProfile(src wire.PathSource, image wire.ImageKey, hosts []string) (*wire.PathProfile, error) {
	if err := db.use(false); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	var keys [][]byte
	if hosts == nil {
		keys = [][]byte{pathFleetKey(src, image)}
	} else {
		for _, h := range slices.Compact(slices.Sorted(slices.Values(hosts))) {
			if err := wire.CheckHost(h); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			keys = append(keys, pathHostKey(src, image, h))
		}
	}
	var out *wire.PathProfile
	for _, k := range keys {
		p, err := db.storedPathProfile(k)
		if err != nil {
			return nil, fmt.Errorf("storage: path profile: %w", err)
		}
		if p == nil {
			continue
		}
		if out, err = MergePathProfiles(out, p); err != nil {
			return nil, fmt.Errorf("%w: path profile: hosts' profiles do not merge: %w", ErrCorrupt, err)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("%w: path profile of %s %s", ErrNotFound, src, image)
	}
	return out, nil
}

// PathUploads lists the uploads applied or refused, by host and ID.
func (db *DB) PathUploads() ([]PathUploadRecord, error) {
	var out []PathUploadRecord
	err := db.scanPrefix([]byte{tPathUploads}, func(k, v []byte) error {
		var id wire.UploadID
		if len(k) < 1+1+len(id)+1 || k[len(k)-len(id)-1] != 0 {
			return fmt.Errorf("%w: path upload key %x", ErrCorrupt, k)
		}
		host := string(k[1 : len(k)-len(id)-1])
		copy(id[:], k[len(k)-len(id):])
		r, err := decodePathUploadRecord(host, id, v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: path uploads: %w", err)
	}
	return out, nil
}
