package wire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"dcpi/internal/bincodec"
)

// PathUpload is one image's path profile and calling context tree, uploaded
// by a host once a profiled run has ended: the Ball-Larus path counts of
// analysis/paths.Profile and the records of analysis/cct.Tree, in a compact
// binary form of the same content (this package imports neither; the
// conversion lives in analysis/fleetpaths). The coordinator sums the
// uploads of each (image, source) fleet-wide and per host.
//
// ID is chosen at random once per upload and kept with the uploaded file
// until the upload is acknowledged, so a redelivery, or an upload retried
// after a crash, carries the same (Host, ID) and the coordinator applies it
// once.
type PathUpload struct {
	Host    string
	ID      UploadID
	Image   ImageKey
	Source  PathSource
	Profile PathProfile
}

// UploadID names one upload of one host (128 random bits).
type UploadID [16]byte

// IsZero reports whether id is unset.
func (id UploadID) IsZero() bool { return id == UploadID{} }

// String is id in hex.
func (id UploadID) String() string { return hex.EncodeToString(id[:]) }

// ParseUploadID inverts String.
func ParseUploadID(s string) (UploadID, error) {
	var id UploadID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("wire: upload ID %q: %w: want 32 hex digits", s, ErrInvalid)
	}
	copy(id[:], b)
	if id.IsZero() {
		return id, fmt.Errorf("wire: upload ID %q: %w: zero", s, ErrInvalid)
	}
	return id, nil
}

// PathSource says who measured a path profile. Oracle profiles are hwsim's
// ground truth: they are stored, merged and queried apart from
// instrumented ones, and never presented as a measurement.
type PathSource uint8

// Path profile sources. Zero is no source.
const (
	SourceInstrumented PathSource = 1 // an instrumented program's counters (dcpi pp instrument)
	SourceOracle       PathSource = 2 // hwsim's ground truth (dcpi pp oracle)
)

func (s PathSource) String() string {
	switch s {
	case SourceInstrumented:
		return "instrumented"
	case SourceOracle:
		return "oracle"
	}
	return fmt.Sprintf("PathSource(%d)", uint8(s))
}

// ParsePathSource inverts String.
func ParsePathSource(s string) (PathSource, error) {
	switch s {
	case "instrumented":
		return SourceInstrumented, nil
	case "oracle":
		return SourceOracle, nil
	}
	return 0, fmt.Errorf("wire: path source %q: %w: want instrumented or oracle", s, ErrInvalid)
}

// Check reports whether s is a known source.
func (s PathSource) Check() error {
	if s != SourceInstrumented && s != SourceOracle {
		return fmt.Errorf("%w: path source %d", ErrInvalid, uint8(s))
	}
	return nil
}

// PathProfile is one image's path counts and calling context tree. It is
// both an upload's content and the coordinator's merged value.
type PathProfile struct {
	ImagePath   string   // the image's path where it was profiled (informative)
	PathMetrics []string // names of PathRun.Metrics
	Procs       []PathProc
	TreeMetrics []string // names of TreeNode.Metrics; empty with no tree
	// Tree is the calling context tree's records in preorder (children
	// in (call site, procedure) order), the root first; empty when the
	// producer recorded no tree.
	Tree []TreeNode
}

// PathProc is one procedure's paths (paths.ProcProfile).
type PathProc struct {
	Entry    uint64
	Name     string
	NumPaths uint64 // 0: not numbered, and then no Paths
	Unknown  uint64 // activations whose paths are unknown
	Paths    []PathRun
}

// PathRun is one path's count and metrics (paths.PathCount).
type PathRun struct {
	ID, Count uint64
	Metrics   []uint64
}

// TreeNode is one calling-context record (cct.Node).
type TreeNode struct {
	Parent    int // index of the parent record; 0 (unused) for the root
	Proc      uint64
	CallSite  uint64
	Metrics   []uint64
	Paths     []PathTally    // by ID
	Recursive []TreeBackedge // by (call site, target)
}

// PathTally is a path's count in one context.
type PathTally struct{ ID, Count uint64 }

// TreeBackedge is a recursive call folded into the ancestor record To.
type TreeBackedge struct {
	CallSite uint64
	To       int
}

// Caps on path uploads, beyond MaxMessageBytes.
const (
	MaxPathMetrics       = 16
	MaxMetricNameLen     = 64
	MaxPathProcs         = 1 << 20
	MaxPathsPerProc      = 1 << 20
	MaxTreeNodes         = 1 << 20
	MaxNodePaths         = 1 << 20
	MaxNodeBackedges     = 1 << 10
	MaxImagePathLen      = MaxPathLen
	MaxProcNameLen       = MaxSymbolNameLen
	PathUploadVersion    = 1 // the version PathUpload and PathProfile are written in
	pathUploadMagic      = "DCPP"
	pathProfileMagic     = "DCPF"
	pathUploadMinVersion = 1
)

// Validate checks u as Marshal and the decoder do.
func (u *PathUpload) Validate() error {
	if err := checkHost(u.Host); err != nil {
		return fmt.Errorf("wire: path upload: %w", err)
	}
	if u.ID.IsZero() {
		return fmt.Errorf("wire: path upload: %w: zero upload ID", ErrInvalid)
	}
	if err := u.Image.Check(); err != nil {
		return fmt.Errorf("wire: path upload: %w: image: %v", ErrInvalid, err)
	}
	if err := u.Source.Check(); err != nil {
		return fmt.Errorf("wire: path upload: %w", err)
	}
	if err := u.Profile.Validate(); err != nil {
		return fmt.Errorf("wire: path upload: %w", err)
	}
	return nil
}

func checkMetricNames(what string, names []string) error {
	if len(names) > MaxPathMetrics {
		return fmt.Errorf("%w: %d %s metrics (cap %d)", ErrTooLarge, len(names), what, MaxPathMetrics)
	}
	for i, m := range names {
		if m == "" || len(m) > MaxMetricNameLen || slices.Contains(names[:i], m) {
			return fmt.Errorf("%w: %s metric %d: empty, longer than %d bytes or repeated name %q", ErrInvalid, what, i, MaxMetricNameLen, m)
		}
	}
	return nil
}

func compareSite(aSite, aProc, bSite, bProc uint64) int {
	if aSite != bSite {
		return cmpU64(aSite, bSite)
	}
	return cmpU64(aProc, bProc)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Validate checks p is canonical: unique metric names; procedures by
// ascending entry, paths by ascending ID below NumPaths (none when 0),
// counted at least once, one value per metric; the tree (if any) a root
// without a key first, then records in preorder with each parent before
// its children and siblings in ascending (call site, procedure) order, no
// procedure twice on a chain, path tallies by ascending ID counted at
// least once, backedges to the record itself or an ancestor other than the
// root, in ascending (call site, target) order.
func (p *PathProfile) Validate() error {
	if len(p.ImagePath) > MaxImagePathLen {
		return fmt.Errorf("%w: image path of %d bytes", ErrTooLarge, len(p.ImagePath))
	}
	if err := checkMetricNames("path", p.PathMetrics); err != nil {
		return err
	}
	if err := checkMetricNames("tree", p.TreeMetrics); err != nil {
		return err
	}
	if len(p.Procs) > MaxPathProcs {
		return fmt.Errorf("%w: %d procedures", ErrTooLarge, len(p.Procs))
	}
	for i := range p.Procs {
		pr := &p.Procs[i]
		if i > 0 && p.Procs[i-1].Entry >= pr.Entry {
			return fmt.Errorf("%w: procedure %#x out of order or repeated", ErrInvalid, pr.Entry)
		}
		if len(pr.Name) > MaxProcNameLen || len(pr.Paths) > MaxPathsPerProc {
			return fmt.Errorf("%w: procedure %#x: name or paths over their caps", ErrTooLarge, pr.Entry)
		}
		if pr.NumPaths == 0 && len(pr.Paths) > 0 {
			return fmt.Errorf("%w: procedure %#x: paths counted but not numbered", ErrInvalid, pr.Entry)
		}
		for j, r := range pr.Paths {
			switch {
			case j > 0 && pr.Paths[j-1].ID >= r.ID:
				return fmt.Errorf("%w: procedure %#x: path %d out of order or repeated", ErrInvalid, pr.Entry, r.ID)
			case r.ID >= pr.NumPaths:
				return fmt.Errorf("%w: procedure %#x: path %d out of range (%d paths)", ErrInvalid, pr.Entry, r.ID, pr.NumPaths)
			case r.Count == 0:
				return fmt.Errorf("%w: procedure %#x: path %d counted 0 times", ErrInvalid, pr.Entry, r.ID)
			case len(r.Metrics) != len(p.PathMetrics):
				return fmt.Errorf("%w: procedure %#x: path %d has %d metrics, want %d", ErrInvalid, pr.Entry, r.ID, len(r.Metrics), len(p.PathMetrics))
			}
		}
	}
	return p.validateTree()
}

func (p *PathProfile) validateTree() error {
	t := p.Tree
	if len(t) == 0 {
		if len(p.TreeMetrics) > 0 {
			return fmt.Errorf("%w: tree metrics without a tree", ErrInvalid)
		}
		return nil
	}
	if len(t) > MaxTreeNodes {
		return fmt.Errorf("%w: %d tree records (cap %d)", ErrTooLarge, len(t), MaxTreeNodes)
	}
	if t[0].Parent != 0 || t[0].Proc != 0 || t[0].CallSite != 0 {
		return fmt.Errorf("%w: tree record 0 is not a root (no parent, no procedure)", ErrInvalid)
	}
	// chain is the path from the root to the previous record; lastChild
	// the latest child of each record, for the sibling order.
	chain := []int{0}
	lastChild := make(map[int]int)
	for i := range t {
		n := &t[i]
		if len(n.Metrics) != len(p.TreeMetrics) {
			return fmt.Errorf("%w: tree record %d has %d metrics, want %d", ErrInvalid, i, len(n.Metrics), len(p.TreeMetrics))
		}
		if len(n.Paths) > MaxNodePaths || len(n.Recursive) > MaxNodeBackedges {
			return fmt.Errorf("%w: tree record %d: paths or backedges over their caps", ErrTooLarge, i)
		}
		if i > 0 {
			k := slices.Index(chain, n.Parent)
			if n.Parent < 0 || n.Parent >= i || k < 0 {
				return fmt.Errorf("%w: tree record %d: parent %d is not on the preorder chain", ErrInvalid, i, n.Parent)
			}
			chain = chain[:k+1]
			for _, a := range chain[1:] {
				if t[a].Proc == n.Proc {
					return fmt.Errorf("%w: tree record %d: procedure %#x already on its chain (recursion not folded)", ErrInvalid, i, n.Proc)
				}
			}
			if s, ok := lastChild[n.Parent]; ok && compareSite(t[s].CallSite, t[s].Proc, n.CallSite, n.Proc) >= 0 {
				return fmt.Errorf("%w: tree record %d: key %#x@%#x not after its previous sibling", ErrInvalid, i, n.Proc, n.CallSite)
			}
			lastChild[n.Parent] = i
			chain = append(chain, i)
		}
		for j, pt := range n.Paths {
			if pt.Count == 0 || j > 0 && n.Paths[j-1].ID >= pt.ID {
				return fmt.Errorf("%w: tree record %d: path %d counted 0 times, out of order or repeated", ErrInvalid, i, pt.ID)
			}
		}
		for j, b := range n.Recursive {
			if b.To <= 0 || !slices.Contains(chain, b.To) {
				return fmt.Errorf("%w: tree record %d: backedge to record %d, not itself or an ancestor", ErrInvalid, i, b.To)
			}
			if j > 0 {
				prev := n.Recursive[j-1]
				if prev.CallSite > b.CallSite || prev.CallSite == b.CallSite && prev.To >= b.To {
					return fmt.Errorf("%w: tree record %d: backedge %#x->%d out of order or repeated", ErrInvalid, i, b.CallSite, b.To)
				}
			}
		}
	}
	return nil
}

// MarshalBinary encodes a valid upload:
//
//	magic "DCPP", version 2 bytes, then
//	host, upload ID (16 bytes), imagekey, source (1 byte), profile body,
//	CRC-32C
func (u *PathUpload) MarshalBinary() ([]byte, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	buf := appendHeader(nil, pathUploadMagic, PathUploadVersion)
	buf = bincodec.AppendString(buf, u.Host)
	buf = append(buf, u.ID[:]...)
	buf = u.Image.appendTo(buf)
	buf = append(buf, byte(u.Source))
	buf = u.Profile.appendBody(buf)
	return seal(buf, "path upload")
}

// MarshalBinary encodes a valid profile on its own (magic "DCPF", the
// profile body): how the coordinator stores a merged one.
func (p *PathProfile) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("wire: path profile: %w", err)
	}
	return seal(p.appendBody(appendHeader(nil, pathProfileMagic, PathUploadVersion)), "path profile")
}

func seal(buf []byte, what string) ([]byte, error) {
	if len(buf)+trailerLen > MaxMessageBytes {
		return nil, fmt.Errorf("wire: %s: %w: encodes to %d bytes (cap %d)", what, ErrTooLarge, len(buf)+trailerLen, MaxMessageBytes)
	}
	return appendTrailer(buf, 0), nil
}

func appendNames(buf []byte, names []string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(names)))
	for _, n := range names {
		buf = bincodec.AppendString(buf, n)
	}
	return buf
}

func appendU64s(buf []byte, vs []uint64) []byte {
	for _, v := range vs {
		buf = binary.AppendUvarint(buf, v)
	}
	return buf
}

// appendBody writes the profile body:
//
//	imagepath, npathmetrics × name,
//	nprocs, each: entry name numpaths unknown npaths, each: id count metrics...
//	ntreemetrics × name,
//	nnodes, each: [parent, for all but the root] proc site metrics...
//	    npaths × (id count), nbackedges × (site to)
func (p *PathProfile) appendBody(buf []byte) []byte {
	buf = bincodec.AppendString(buf, p.ImagePath)
	buf = appendNames(buf, p.PathMetrics)
	buf = binary.AppendUvarint(buf, uint64(len(p.Procs)))
	for i := range p.Procs {
		pr := &p.Procs[i]
		buf = binary.AppendUvarint(buf, pr.Entry)
		buf = bincodec.AppendString(buf, pr.Name)
		buf = binary.AppendUvarint(buf, pr.NumPaths)
		buf = binary.AppendUvarint(buf, pr.Unknown)
		buf = binary.AppendUvarint(buf, uint64(len(pr.Paths)))
		for _, r := range pr.Paths {
			buf = binary.AppendUvarint(buf, r.ID)
			buf = binary.AppendUvarint(buf, r.Count)
			buf = appendU64s(buf, r.Metrics)
		}
	}
	buf = appendNames(buf, p.TreeMetrics)
	buf = binary.AppendUvarint(buf, uint64(len(p.Tree)))
	for i := range p.Tree {
		n := &p.Tree[i]
		if i > 0 {
			buf = binary.AppendUvarint(buf, uint64(n.Parent))
		}
		buf = binary.AppendUvarint(buf, n.Proc)
		buf = binary.AppendUvarint(buf, n.CallSite)
		buf = appendU64s(buf, n.Metrics)
		buf = binary.AppendUvarint(buf, uint64(len(n.Paths)))
		for _, pt := range n.Paths {
			buf = binary.AppendUvarint(buf, pt.ID)
			buf = binary.AppendUvarint(buf, pt.Count)
		}
		buf = binary.AppendUvarint(buf, uint64(len(n.Recursive)))
		for _, b := range n.Recursive {
			buf = binary.AppendUvarint(buf, b.CallSite)
			buf = binary.AppendUvarint(buf, uint64(b.To))
		}
	}
	return buf
}

func checkPathVersion(what string, v uint16) error {
	if v < pathUploadMinVersion || v > PathUploadVersion {
		return fmt.Errorf("wire: %s: %w %d (this build reads %d to %d)", what, ErrVersion, v, pathUploadMinVersion, PathUploadVersion)
	}
	return nil
}

// UnmarshalBinary decodes and validates an upload from outside input. On
// error *u is left zero.
func (u *PathUpload) UnmarshalBinary(data []byte) error {
	*u = PathUpload{}
	body, _, err := frameVersions(data, pathUploadMagic, "path upload", checkPathVersion)
	if err != nil {
		return err
	}
	d := newDecoder(body)
	var nu PathUpload
	nu.Host = d.String("host", MaxHostLen)
	copy(nu.ID[:], d.Bytes("upload ID", len(nu.ID)))
	nu.Image = decodeImageKey(d, "image")
	nu.Source = PathSource(d.Byte("source"))
	nu.Profile.decodeBody(d)
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("path upload", err)
	}
	if err := nu.Validate(); err != nil {
		return err
	}
	*u = nu
	return nil
}

// UnmarshalBinary decodes and validates a profile MarshalBinary wrote.
func (p *PathProfile) UnmarshalBinary(data []byte) error {
	*p = PathProfile{}
	body, _, err := frameVersions(data, pathProfileMagic, "path profile", checkPathVersion)
	if err != nil {
		return err
	}
	d := newDecoder(body)
	var np PathProfile
	np.decodeBody(d)
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("path profile", err)
	}
	if err := np.Validate(); err != nil {
		return fmt.Errorf("wire: path profile: %w", err)
	}
	*p = np
	return nil
}

func decodeNames(d *bincodec.Decoder, field string) []string {
	n := d.Count(field, MaxPathMetrics, 1)
	var out []string
	for i := 0; i < n && d.Err() == nil; i++ {
		out = append(out, d.String(field, MaxMetricNameLen))
	}
	return out
}

func decodeU64s(d *bincodec.Decoder, field string, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = d.Uvarint(field)
	}
	return out
}

func (p *PathProfile) decodeBody(d *bincodec.Decoder) {
	p.ImagePath = d.String("image path", MaxImagePathLen)
	p.PathMetrics = decodeNames(d, "path metrics")
	nm := len(p.PathMetrics)
	np := d.Count("procedures", MaxPathProcs, 5)
	if np > 0 {
		p.Procs = make([]PathProc, np)
	}
	for i := 0; i < np && d.Err() == nil; i++ {
		pr := &p.Procs[i]
		pr.Entry = d.Uvarint("entry")
		pr.Name = d.String("procedure name", MaxProcNameLen)
		pr.NumPaths = d.Uvarint("num paths")
		pr.Unknown = d.Uvarint("unknown")
		n := d.Count("paths", MaxPathsPerProc, 2+nm)
		if n > 0 {
			pr.Paths = make([]PathRun, n)
		}
		for j := 0; j < n && d.Err() == nil; j++ {
			r := &pr.Paths[j]
			r.ID = d.Uvarint("path ID")
			r.Count = d.Uvarint("path count")
			r.Metrics = decodeU64s(d, "path metric", nm)
		}
	}
	p.TreeMetrics = decodeNames(d, "tree metrics")
	tm := len(p.TreeMetrics)
	nn := d.Count("tree records", MaxTreeNodes, 4+tm)
	if nn > 0 {
		p.Tree = make([]TreeNode, nn)
	}
	for i := 0; i < nn && d.Err() == nil; i++ {
		n := &p.Tree[i]
		if i > 0 {
			n.Parent = int(d.UvarintMax("parent", uint64(i-1)))
		}
		n.Proc = d.Uvarint("procedure")
		n.CallSite = d.Uvarint("call site")
		n.Metrics = decodeU64s(d, "record metric", tm)
		k := d.Count("record paths", MaxNodePaths, 2)
		if k > 0 {
			n.Paths = make([]PathTally, k)
		}
		for j := 0; j < k && d.Err() == nil; j++ {
			n.Paths[j] = PathTally{ID: d.Uvarint("record path ID"), Count: d.Uvarint("record path count")}
		}
		b := d.Count("backedges", MaxNodeBackedges, 2)
		if b > 0 {
			n.Recursive = make([]TreeBackedge, b)
		}
		for j := 0; j < b && d.Err() == nil; j++ {
			n.Recursive[j] = TreeBackedge{CallSite: d.Uvarint("backedge site"), To: int(d.UvarintMax("backedge target", uint64(i)))}
		}
	}
}
