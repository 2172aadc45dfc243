package storage

import (
	"encoding/json"
	"fmt"
)

// RunInfo is what a local profile run (dcpi profile) was, as the tools
// need it to read its samples: the CPU model, the events counted, and
// ProfileMe's sampling interval S and pair window W (ProfileMe sec. 4.2:
// the wasted-slot and latency estimates scale by them; W is 16 on the
// 21164 and 128 on the 21264, so a tool that guessed one would be wrong
// on the other). A database a cluster wrote holds none.
type RunInfo struct {
	Model  string   `json:"model"`
	Events []string `json:"events"`
	Stacks bool     `json:"stacks"`
	// ProfileMe's figures, zero when it was off.
	MeInterval   float64  `json:"me_interval,omitempty"`    // S: mean fetched instructions per sample
	MePairWindow float64  `json:"me_pair_window,omitempty"` // W: largest intra-pair distance, in instructions
	MeIssueWidth float64  `json:"me_issue_width,omitempty"` // issue slots per cycle
	Programs     []string `json:"programs,omitempty"`       // the command lines run
}

// runInfoKey is RunInfo's key: 'm' "run" → the record as JSON (doc.go).
var runInfoKey = []byte{tMeta, 'r', 'u', 'n'}

// PutRunInfo records what the run that writes the database is.
func (db *DB) PutRunInfo(r RunInfo) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("storage: put run info: %w", err)
	}
	var m Meta
	m.set(runInfoKey, v)
	return db.CommitMeta(&m)
}

// RunInfo is the run's record; ok is false for a database without one.
func (db *DB) RunInfo() (r RunInfo, ok bool, err error) {
	if err := db.use(false); err != nil {
		return r, false, err
	}
	defer db.mu.RUnlock()
	v, ok, err := db.get(runInfoKey)
	if err != nil || !ok {
		return r, false, err
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return r, false, fmt.Errorf("storage: run info: %w", err)
	}
	return r, true, nil
}
