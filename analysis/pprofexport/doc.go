// Package pprofexport writes dcpi's profiles as pprof profiles: the
// sample counts (per host and epoch, with call stacks when stored) and
// ProfileMe samples, with locations symbolized from the image records
// and, where the image bytes are found, source lines from their DWARF.
// It is the only importer of github.com/google/pprof/profile. It owns
// neither the read interfaces (package analysis) nor symbolization
// (analysis/symbolize).
package pprofexport
