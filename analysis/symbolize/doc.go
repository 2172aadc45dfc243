// Package symbolize turns the addresses a profile holds into names: an
// image offset into the procedure that contains it, from the symbol table
// the node uploaded with the image (Table, wire.ImageRecord), cached per
// image over a profile source (Symbolizer); an address into its source
// file, line and inlined frames, from the image's DWARF (ImageSource); and
// an image's bytes, found on disk or embedded (an ImageFinder such as
// analysis/imagefind's) into an ImageFile, checked against the profiled
// image's key (ImageKeyOf, OpenImageFile) so that a report never
// disassembles another build.
//
// It owns no report: analysis/report, analysis/calc, analysis/profileme and
// analysis/pprofexport all symbolize through it, so they name procedures
// alike.
package symbolize
