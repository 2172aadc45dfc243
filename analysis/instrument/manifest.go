package instrument

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
)

// ManifestSection is the non-alloc section of an instrumented ELF that
// describes its instrumentation (gzip-compressed JSON of a Manifest).
const ManifestSection = ".dcpi.pp"

// ManifestVersion is the manifest and dump format's version.
const ManifestVersion = 1

// Manifest describes what an instrumented image counts and where: the
// reader needs only it (from the instrumented ELF) and a dump.
type Manifest struct {
	Version int    `json:"version"`
	Mode    string `json:"mode"`
	// Original is the SHA-256 of the uninstrumented file, hex.
	Original string `json:"original"`
	// OriginalID is the uninstrumented image's identity as hwsim names
	// it ("buildid:<hex>" or "sha256:<hex>"), for path profiles.
	OriginalID string `json:"original_id,omitempty"`
	// DumpPath is where the runtime appends its records at exit.
	DumpPath string `json:"dump_path"`
	// Counters is the number of 64-bit counters in each record.
	Counters int `json:"counters"`
	// Segment is the address of the added PT_LOAD segment, Trampolines the
	// number of original instructions replaced by a branch to a stub.
	Segment     uint64 `json:"segment"`
	Trampolines int    `json:"trampolines"`
	// Spills counts the points where no two dead registers were found and
	// the stub pushed two on the stack.
	Spills int `json:"spills"`
	// Special names the paths mode's first counters (lost, out_of_range,
	// stack_overflow, unmatched): events that left paths uncounted.
	Special []string `json:"special,omitempty"`
	// Metrics names the paths mode's per-path metrics (cycles and the
	// two rdpic events; metrics.go), none without --metrics.
	Metrics []string `json:"metrics,omitempty"`
	// HashBase and HashSlots place the paths mode's hash table.
	HashBase  int `json:"hash_base,omitempty"`
	HashSlots int `json:"hash_slots,omitempty"`
	// CCT mode: the metrics of a call record (calls; with --metrics also
	// cycles and the two rdpic events), the root record's address and the
	// size of each heap chunk mapped after the first.
	CCTMetrics []string `json:"cct_metrics,omitempty"`
	CCTRoot    uint64   `json:"cct_root,omitempty"`
	CCTGrow    int      `json:"cct_grow,omitempty"`
	// CCTPaths: each call record counts its procedure's paths (a
	// procedure's np > 0; hashed: in a list); see cctmode.go.
	CCTPaths bool       `json:"cct_paths,omitempty"`
	Procs    []ProcInfo `json:"procs"`
	Skipped  []Skip     `json:"skipped,omitempty"`
}

// ProcInfo is one instrumented procedure.
type ProcInfo struct {
	Name       string       `json:"name"`
	Start, End uint64       `json:"-"`
	Range      [2]uint64    `json:"range"`
	Blocks     []BlockInfo  `json:"blocks"`
	Branches   []BranchInfo `json:"branches,omitempty"`
	Jumps      []JumpInfo   `json:"jumps,omitempty"`
	// Paths mode: the procedure's slot tag ID, its NumPaths under
	// analysis/paths's numbering, and its first path counter.
	ID       int    `json:"id,omitempty"`
	NumPaths uint64 `json:"np,omitempty"`
	PathBase int    `json:"pb,omitempty"`
	// Hashed says the paths are counted in the shared hash table and
	// PathBase is the procedure's overflow counter (pathsmode.go).
	Hashed bool `json:"hashed,omitempty"`
	// CallSites are the CCT mode's call sites of the procedure, in slot
	// order (its call records' callee slots).
	CallSites []uint64 `json:"cs,omitempty"`
}

// BlockInfo is a basic block [Start, End) and the counter of its
// executions (counted at its first instruction), -1 if it has none.
type BlockInfo struct {
	Start   uint64 `json:"s"`
	End     uint64 `json:"e"`
	Counter int    `json:"c"`
}

// BranchInfo is a conditional branch at PC with counters for its taken
// transfers (to Target) and its fall-throughs.
type BranchInfo struct {
	PC     uint64 `json:"pc"`
	Target uint64 `json:"t"`
	Taken  int    `json:"tc"`
	Fall   int    `json:"fc"`
}

// JumpInfo is a jump-table jmp at PC: counter Counter+k counts transfers to
// Lo+4k, for k < Slots.
type JumpInfo struct {
	PC      uint64   `json:"pc"`
	Lo      uint64   `json:"lo"`
	Counter int      `json:"c"`
	Slots   int      `json:"n"`
	Targets []uint64 `json:"t"`
}

// Skip is a procedure left uninstrumented, and why.
type Skip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// encode returns the manifest's section contents and its hash (the first
// 16 bytes of SHA-256 of its JSON), which every dump record carries.
func (m *Manifest) encode() (section []byte, hash [16]byte, err error) {
	for i := range m.Procs {
		m.Procs[i].Range = [2]uint64{m.Procs[i].Start, m.Procs[i].End}
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, hash, err
	}
	sum := sha256.Sum256(js)
	copy(hash[:], sum[:])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(js)
	if err := zw.Close(); err != nil {
		return nil, hash, err
	}
	return buf.Bytes(), hash, nil
}

// maxManifest bounds a manifest's JSON, against a decompression bomb.
const maxManifest = 1 << 30

// decodeManifest parses a manifest section and returns it with its hash.
func decodeManifest(section []byte) (*Manifest, [16]byte, error) {
	var hash [16]byte
	zr, err := gzip.NewReader(bytes.NewReader(section))
	if err != nil {
		return nil, hash, fmt.Errorf("manifest: %w", err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, maxManifest+1))
	if err != nil {
		return nil, hash, fmt.Errorf("manifest: %w", err)
	}
	if len(js) > maxManifest {
		return nil, hash, fmt.Errorf("manifest: larger than %d bytes", maxManifest)
	}
	var m Manifest
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, hash, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != ManifestVersion {
		return nil, hash, fmt.Errorf("manifest: version %d, this reader knows %d", m.Version, ManifestVersion)
	}
	for i := range m.Procs {
		m.Procs[i].Start, m.Procs[i].End = m.Procs[i].Range[0], m.Procs[i].Range[1]
	}
	sum := sha256.Sum256(js)
	copy(hash[:], sum[:])
	return &m, hash, nil
}
