// Package analysis holds the logic of DCPI's tools — dcpiprof, dcpilist,
// dcpistats, dcpidiff — and pprof export, as pure functions over read
// interfaces of the profile database and the uploaded images, and
// dcpicalc's query and rendering (sec. 6: frequency, CPI and culprits per
// instruction): Calc finds each procedure's code and samples and hands
// them to the estimator, analysis/calc, which builds on analysis/cfg (each
// procedure's CFG), analysis/cfg/cycleq (frequency equivalence classes)
// and analysis/sched (the static 21164 scheduler); WriteCalcText prints
// Figures 2 and 4.
//
// The boundary is Source: a profile scan and an image lookup, which
// *storage.DB satisfies for a local database and a cluster query client can
// satisfy for the coordinator's; MemSource is its in-memory twin for tests.
// Symbolizer turns an image offset into the procedure that contains it with
// the symbol table the node uploaded (wire.ImageRecord), caching one table
// per image. Prof is dcpiprof (sec. 3.1 and Figure 1 of the paper): samples
// per procedure or per image, a column group per event, sorted by the first.
// List is dcpilist (an annotated disassembly with source lines, from image
// bytes an ImageFinder supplies and OpenImageFile checks against the
// profiled image's key); Stats is dcpistats (Figure 3: statistics across
// SampleSets, sorted by normalized range); Diff compares two profiles'
// shares per procedure with ProfileMe's 1/sqrt(k) error as a z-score
// (CompareShares); Pprof exports a github.com/google/pprof profile.
//
// The package does not read files, open databases or print on its own; the
// dcpi commands do that and hand it a Source and a writer.
package analysis
