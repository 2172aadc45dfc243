// Package profileme owns ProfileMe's estimators and reports (the
// ProfileMe paper, sec. 5): the per-instruction and per-procedure figures
// with their errors (dcpi me), the data addresses of sampled loads and
// stores (dcpi me --addrs), and the paths reconstructed from the history
// (dcpi me --paths). Run is dcpi me's one call: Options name the view,
// and the result (Report, PathsReport or AddrReport) prints itself with
// WriteText or WriteJSON; an empty selection is Run's error. It reads
// through its own small interfaces (Source, AddrSource, HistorySource)
// that *storage.DB and the cluster's query service satisfy; symbolization
// comes from analysis/symbolize, path reconstruction from
// analysis/mepaths, and pprof export of the samples from
// analysis/pprofexport (ExportProfileMe for dcpi me --pprof).
package profileme
