// Package mefig reproduces the ProfileMe paper's experiments on hwsim
// (docs/profileme.md): each figure runs a committed workload on a
// simulated machine with ProfileMe on, computes the figure's data from the
// samples, checks it against the machine's ground truth, and draws it as
// SVG. Figure 3 (estimate/actual against samples) is fig3.go.
package mefig
