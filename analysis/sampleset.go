package analysis

import "dcpi/storage"

// SampleSet is one profile among several compared by report.Stats and
// report.Diff: DCPI's "set of sample files", here a selection of the
// database — an epoch, a host, the hosts with a label, a run's epochs.
type SampleSet struct {
	Name   string        `json:"name"` // how the set is shown ("epoch=1", "host=alpha0")
	Filter storage.Query `json:"-"`
}
