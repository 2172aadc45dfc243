// Package analysis is the profile data model the tools read: the read
// interfaces of the profile database and the uploaded images, and the
// vocabulary every tool's query shares.
//
// The boundary is Source: a profile scan and an image lookup, which
// *storage.DB satisfies for a local database and a cluster query client can
// satisfy for the coordinator's; StackSource adds the sampled call stacks
// (Stacks asks a Source for them). MemSource is their in-memory twin for
// tests. A SampleSet names one selection of the samples among several a
// tool compares; EventName and ParseEvent name the events; ErrQuery marks
// a request that cannot be run, and MatchImagePath is the image-path
// selection every query shares.
//
// The tools build on it, one job per package:
//
//   - analysis/symbolize turns offsets into procedures and source lines
//     and finds and checks image bytes (Symbolizer, ImageFinder);
//   - analysis/report holds dcpiprof, dcpilist, dcpistats, dcpidiff and
//     the call-stack reports (Prof, List, Stats, Diff, Callers, Tree);
//   - analysis/calc is dcpicalc: its estimator and its query and listing
//     (Run, Report.WriteText);
//   - analysis/profileme and analysis/pprofexport are ProfileMe's
//     reports and the pprof export; analysis/web serves them all.
//
// Nothing here reads files, opens databases or prints; the dcpi commands
// do that and hand the tools a Source and a writer.
package analysis
