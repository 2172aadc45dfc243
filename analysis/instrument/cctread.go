package instrument

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"dcpi/analysis/cct"
)

// CCTProfile is a CCT-mode dump read back: the calling context tree the
// instrumented program built (every process's, merged: forked children
// and the images before an execve dump their own) and the named counters.
type CCTProfile struct {
	Manifest *Manifest
	Records  int
	// Tree keys records by procedure start address and call site, as the
	// oracle's; its metrics are the manifest's CCTMetrics.
	Tree *cct.Tree
	// Special holds the named counters (CCTSpecialCounters), summed.
	Special map[string]uint64
	// Unreached counts call records no slot leads to (a list node the
	// exhausted heap could not hold): their metrics are not in Tree.
	Unreached int
	// HeapBytes is the largest record's heap (the chunks' used bytes),
	// Chunks its number of chunks.
	HeapBytes uint64
	Chunks    int
}

// ReadCCT reads a CCT-mode dump with the instrumented image that wrote it.
func ReadCCT(instrumented, dump []byte) (*CCTProfile, error) {
	m, hash, err := ReadManifest(instrumented)
	if err != nil {
		return nil, err
	}
	if m.Mode != ModeCCT {
		return nil, fmt.Errorf("instrumented image: mode %q, not %s", m.Mode, ModeCCT)
	}
	return cctFromDump(m, hash, dump)
}

// cctRecord is one process's CCT-mode record: its named counters and the
// heap chunks' words.
type cctRecord struct {
	PID     uint64
	Special []uint64
	Heap    []uint64
}

// parseCCTDump splits a CCT-mode dump into records; each carries its
// length (the words after the header), which must hold the named counters.
func parseCCTDump(data []byte, hash [16]byte, specials int) ([]cctRecord, error) {
	le := binary.LittleEndian
	var out []cctRecord
	for off := 0; off < len(data); {
		rest := data[off:]
		if len(rest) < headerSize {
			return nil, fmt.Errorf("dump: record at byte %d: %d bytes, shorter than a header", off, len(rest))
		}
		if string(rest[:8]) != dumpMagic {
			return nil, fmt.Errorf("dump: record at byte %d: bad magic", off)
		}
		if v := le.Uint32(rest[8:]); v != ManifestVersion {
			return nil, fmt.Errorf("dump: record at byte %d: version %d, this reader knows %d", off, v, ManifestVersion)
		}
		if mode := le.Uint32(rest[12:]); mode != modeCCT {
			return nil, fmt.Errorf("dump: record at byte %d: mode %d, not a CCT record", off, mode)
		}
		if [16]byte(rest[headerHashOff:headerHashOff+16]) != hash {
			return nil, fmt.Errorf("dump: record at byte %d: %w", off, ErrMismatch)
		}
		n := le.Uint64(rest[headerCountOff:])
		if n < uint64(specials) {
			return nil, fmt.Errorf("dump: record at byte %d: %d words, fewer than the %d named counters", off, n, specials)
		}
		if uint64(len(rest)-headerSize)/8 < n {
			return nil, fmt.Errorf("dump: record at byte %d: truncated (%d words expected)", off, n)
		}
		words := make([]uint64, n)
		for i := range words {
			words[i] = le.Uint64(rest[headerSize+8*i:])
		}
		out = append(out, cctRecord{PID: le.Uint64(rest[headerPIDOff:]), Special: words[:specials], Heap: words[specials:]})
		off += headerSize + 8*int(n)
	}
	return out, nil
}

// cctFromDump reads a dump against manifest m (whose hash is hash).
func cctFromDump(m *Manifest, hash [16]byte, dump []byte) (*CCTProfile, error) {
	if len(m.CCTMetrics) == 0 || len(m.CCTMetrics) > 64 {
		return nil, fmt.Errorf("manifest: %d CCT metrics", len(m.CCTMetrics))
	}
	recs, err := parseCCTDump(dump, hash, len(m.Special))
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("dump: no records (did the program exit through exit or exit_group?)")
	}
	procs := map[uint64]*ProcInfo{}
	for i := range m.Procs {
		procs[m.Procs[i].Start] = &m.Procs[i]
	}
	p := &CCTProfile{Manifest: m, Records: len(recs), Tree: cct.New(m.CCTMetrics...), Special: map[string]uint64{}}
	for _, r := range recs {
		for i, name := range m.Special {
			p.Special[name] += r.Special[i]
		}
		t, st, err := cctTreeOf(m, procs, r.Heap)
		if err != nil {
			return nil, fmt.Errorf("dump: process %d: %w", r.PID, err)
		}
		p.Unreached += st.unreached
		if b := 8 * uint64(len(r.Heap)); b > p.HeapBytes {
			p.HeapBytes, p.Chunks = b, st.chunks
		}
		if err := p.Tree.Merge(t); err != nil {
			return nil, err
		}
	}
	return p, nil
}

type cctObject struct {
	kind  uint64
	words []uint64
}

type cctTreeStats struct{ unreached, chunks int }

// cctTreeOf rebuilds one process's tree from its heap chunks: every
// object by address, then the records reached from the root through the
// callee slots (tag 0: one record; tag 2: a list; tag 1: nothing). A
// record whose parent is the slot's record is a tree child; one that is
// an ancestor of it is recursion, a backedge. Anything else is corrupt.
func cctTreeOf(m *Manifest, procs map[uint64]*ProcInfo, heap []uint64) (*cct.Tree, cctTreeStats, error) {
	var st cctTreeStats
	objs := map[uint64]cctObject{}
	var cur uint64
	chunked := false
	for i := 0; i < len(heap); {
		hdr := heap[i]
		kind, size := hdr&3, hdr>>2
		if size < 16 || size%8 != 0 || size/8 > uint64(len(heap)-i) {
			return nil, st, fmt.Errorf("heap word %d: object of %d bytes", i, size)
		}
		w := heap[i : i+int(size/8)]
		switch kind {
		case kindChunk:
			if size != chunkHead {
				return nil, st, fmt.Errorf("heap word %d: chunk header of %d bytes", i, size)
			}
			cur, chunked = w[1], true
			st.chunks++
		case kindRecord, kindList:
			if !chunked {
				return nil, st, fmt.Errorf("heap word %d: an object before any chunk header", i)
			}
			if kind == kindList && size != cctListNode && !(m.CCTPaths && size == cctPathNode) {
				return nil, st, fmt.Errorf("heap word %d: list node of %d bytes", i, size)
			}
			if _, dup := objs[cur]; dup {
				return nil, st, fmt.Errorf("heap word %d: two objects at %#x", i, cur)
			}
			objs[cur] = cctObject{kind: kind, words: w}
		default:
			return nil, st, fmt.Errorf("heap word %d: object kind 0", i)
		}
		cur += size
		i += int(size / 8)
	}
	nm := len(m.CCTMetrics)
	type rec struct {
		id, parent uint64
		metrics    []uint64
		slots      []uint64
		pathWords  []uint64 // with paths: the counts, or the list head
	}
	record := func(addr uint64) (rec, error) {
		o, ok := objs[addr]
		if !ok || o.kind != kindRecord {
			return rec{}, fmt.Errorf("no call record at %#x", addr)
		}
		if len(o.words) < 3+nm {
			return rec{}, fmt.Errorf("call record at %#x: %d words", addr, len(o.words))
		}
		r := rec{id: o.words[1], parent: o.words[2], metrics: o.words[3 : 3+nm], slots: o.words[3+nm:]}
		if m.CCTPaths {
			if len(r.slots) == 0 || r.slots[0] > uint64(len(r.slots)-1) {
				return rec{}, fmt.Errorf("call record at %#x: path words out of range", addr)
			}
			p := int(r.slots[0])
			r.slots, r.pathWords = r.slots[1:len(r.slots)-p], r.slots[len(r.slots)-p:]
		}
		return r, nil
	}
	// addPaths counts record r's paths (of procedure pi) in node n.
	addPaths := func(addr uint64, r rec, pi *ProcInfo, n *cct.Node) error {
		if !m.CCTPaths || pi.NumPaths == 0 {
			if len(r.pathWords) != 0 {
				return fmt.Errorf("call record at %#x: %d path words, its procedure counts no paths", addr, len(r.pathWords))
			}
			return nil
		}
		if !pi.Hashed {
			if uint64(len(r.pathWords)) != pi.NumPaths {
				return fmt.Errorf("call record at %#x: %d path counters, the procedure has %d paths", addr, len(r.pathWords), pi.NumPaths)
			}
			for id, c := range r.pathWords {
				if c != 0 {
					n.AddPath(uint64(id), c)
				}
			}
			return nil
		}
		if len(r.pathWords) != 1 {
			return fmt.Errorf("call record at %#x: %d path words for a path list", addr, len(r.pathWords))
		}
		seen := map[uint64]bool{}
		for p := r.pathWords[0]; p != 0; {
			o, ok := objs[p]
			if !ok || o.kind != kindList || len(o.words) != cctPathNode/8 || seen[p] {
				return fmt.Errorf("call record at %#x: bad path list node at %#x", addr, p)
			}
			seen[p] = true
			id, c := o.words[1], o.words[2]
			if id >= pi.NumPaths {
				return fmt.Errorf("call record at %#x: path %d of %d", addr, id, pi.NumPaths)
			}
			n.AddPath(id, c)
			p = o.words[3]
		}
		return nil
	}
	root, err := record(m.CCTRoot)
	if err != nil {
		return nil, st, fmt.Errorf("root: %w", err)
	}
	if root.id != 0 || root.parent != 0 || len(root.slots) != 1 {
		return nil, st, fmt.Errorf("root record at %#x is not T (procedure 0, one slot)", m.CCTRoot)
	}
	t := cct.New(m.CCTMetrics...)
	nodeOf := map[uint64]*cct.Node{m.CCTRoot: t.Root}
	var walk func(addr uint64, r rec, n *cct.Node, sites []uint64) error
	walk = func(addr uint64, r rec, n *cct.Node, sites []uint64) error {
		if len(r.slots) != len(sites) {
			return fmt.Errorf("call record at %#x of %#x: %d slots, the procedure has %d call sites", addr, r.id, len(r.slots), len(sites))
		}
		for k, v := range r.slots {
			var elems []uint64
			switch v & 3 {
			case tagUninit:
				continue
			case 0:
				elems = []uint64{v}
			case tagList:
				for p, steps := v&^3, 0; ; steps++ {
					o, ok := objs[p]
					if !ok || o.kind != kindList || steps > len(objs) {
						return fmt.Errorf("call record at %#x slot %d: bad callee list at %#x", addr, k, p)
					}
					elems = append(elems, o.words[1])
					next := o.words[2]
					if next&3 == tagUninit {
						break
					}
					if next&3 != tagList {
						return fmt.Errorf("call record at %#x slot %d: list ends in %#x", addr, k, next)
					}
					p = next &^ 3
				}
			default:
				return fmt.Errorf("call record at %#x slot %d: tag 3", addr, k)
			}
			for _, ea := range elems {
				e, err := record(ea)
				if err != nil {
					return fmt.Errorf("call record at %#x slot %d: %w", addr, k, err)
				}
				pi := procs[e.id]
				if pi == nil {
					return fmt.Errorf("call record at %#x: procedure %#x is not instrumented", ea, e.id)
				}
				if e.parent != addr {
					// Recursion: the record must be an ancestor's.
					anc := nodeOf[ea]
					ok := false
					for a := n; a != nil && anc != nil; a = a.Parent {
						ok = ok || a == anc
					}
					if !ok {
						return fmt.Errorf("call record at %#x slot %d: %#x is neither its child nor its ancestor", addr, k, ea)
					}
					if got := t.Child(n, e.id, sites[k]); got != anc {
						return fmt.Errorf("call record at %#x slot %d: recursion into %#x does not fold into its ancestor", addr, k, ea)
					}
					continue
				}
				if nodeOf[ea] != nil {
					return fmt.Errorf("call record at %#x reached twice", ea)
				}
				c := t.Child(n, e.id, sites[k])
				if c.Parent != n || nodeOf[ea] != nil || slices.ContainsFunc(c.Metrics, func(x uint64) bool { return x != 0 }) {
					return fmt.Errorf("call record at %#x: context of %#x twice under %#x (recursion not folded or a duplicate)", ea, e.id, addr)
				}
				nodeOf[ea] = c
				copy(c.Metrics, e.metrics)
				if err := addPaths(ea, e, pi, c); err != nil {
					return err
				}
				if err := walk(ea, e, c, pi.CallSites); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(m.CCTRoot, root, t.Root, []uint64{0}); err != nil {
		return nil, st, err
	}
	for a, o := range objs {
		if o.kind == kindRecord && nodeOf[a] == nil {
			st.unreached++
		}
	}
	return t, st, nil
}

// The saved instrumented tree (dcpi pp counts --save of a CCT-mode
// dump): one JSON object
//
//	{"format":"dcpi-pp-cct","version":1,"source":"dcpi-pp-instrument",
//	 "id":ID,"tree":<cct.Tree encoding>}
//
// ID is the original image's (as hwsim names it), so the tree merges with
// the image's other profiles in the fleet.
const (
	cctSavedFormat  = "dcpi-pp-cct"
	cctSavedVersion = 1
)

type encCCTSaved struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Source  string          `json:"source"`
	ID      string          `json:"id"`
	Tree    json.RawMessage `json:"tree"`
}

// ImageID is the original image's identity: its build ID as hwsim names
// it, else the SHA-256 of the file.
func (m *Manifest) ImageID() string {
	if m.OriginalID != "" {
		return m.OriginalID
	}
	return "sha256:" + m.Original
}

// WriteSaved writes p's tree with the original image's ID.
func (p *CCTProfile) WriteSaved(w io.Writer) error {
	tb, err := p.Tree.MarshalJSON()
	if err != nil {
		return err
	}
	b, err := json.Marshal(encCCTSaved{Format: cctSavedFormat, Version: cctSavedVersion, Source: ProfileSource, ID: p.Manifest.ImageID(), Tree: tb})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// IsSavedCCT reports whether data claims to be a file WriteSaved wrote.
func IsSavedCCT(data []byte) bool {
	var head struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(data, &head) == nil && head.Format == cctSavedFormat
}

// ReadSavedCCT decodes a file WriteSaved wrote: the original image's ID
// and the tree. Unknown formats, versions, sources and fields, trailing
// data and any tree cct.Decode refuses are errors.
func ReadSavedCCT(data []byte) (id string, t *cct.Tree, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e encCCTSaved
	if err := dec.Decode(&e); err != nil {
		return "", nil, fmt.Errorf("saved CCT: %w", err)
	}
	if dec.More() {
		return "", nil, fmt.Errorf("saved CCT: data after the object")
	}
	if e.Format != cctSavedFormat || e.Version != cctSavedVersion || e.Source != ProfileSource {
		return "", nil, fmt.Errorf("saved CCT: format %q version %d source %q, want %q %d %q", e.Format, e.Version, e.Source, cctSavedFormat, cctSavedVersion, ProfileSource)
	}
	if e.ID == "" {
		return "", nil, fmt.Errorf("saved CCT: no image ID")
	}
	t, err = cct.Decode(e.Tree)
	if err != nil {
		return "", nil, fmt.Errorf("saved CCT: %w", err)
	}
	return e.ID, t, nil
}
