// Package report holds the logic of DCPI's reporting tools as pure
// functions over an analysis.Source: Prof is dcpiprof (sec. 3.1 and
// Figure 1 of the paper: samples per procedure or per image, a column
// group per event, sorted by the first); List is dcpilist (an annotated
// disassembly with source lines, from image bytes a symbolize.ImageFinder
// supplies); Stats is dcpistats (Figure 3: statistics across
// analysis.SampleSets, sorted by normalized range); Diff compares two
// profiles' shares per procedure with ProfileMe's 1/sqrt(k) error as a
// z-score (CompareShares); Callers and Tree read the sampled call stacks
// (by caller, and as a call tree).
//
// Every report has one calling convention: Name(src, NameQuery) returns
// its result as data, whose JSON form is the command's machine interface,
// and the result prints itself with WriteText (and WriteJSON). The
// package prints only to the writer it is given and opens nothing.
package report
