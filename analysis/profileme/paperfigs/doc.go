// Package paperfigs holds the ProfileMe paper's figure reproductions on
// hwsim (docs/profileme.md): each figure runs a committed workload on a
// simulated machine with ProfileMe on, computes the figure's data from the
// samples, checks it against the machine's ground truth, and draws it as
// SVG (dcpi me figure2, figure3, figure6, figure7, skid). Figure 3
// (estimate/actual against samples) is fig3.go. It sits under profileme
// because it exercises profileme's estimators; unlike them it runs the
// machine, which the layering allows it alone among the analyses.
package paperfigs
