// Package calc is dcpicalc (DCPI paper sec. 6): from a procedure's code
// and its samples it factors each instruction's CYCLES samples S_i into an
// execution frequency F and a cycles-per-instruction C_i = S_i / F, and
// names the culprits of every stall.
//
// It has two layers. The query, Run, finds each procedure's code and
// samples through an analysis.Source and a symbolize.ImageFinder (ranking
// procedures with report.Prof), builds the procedure's CFG (analysis/cfg)
// and hands both to the estimator; Report.WriteText prints Figures 2 and
// 4, and CompareReport holds a Report to hwsim's ground truth afterwards
// (ReportAccuracy). Analyze is dcpi calc's one call: Options check the
// choice of procedures, read the periods, run the query and compare, and
// the Output prints the report or its accuracy. The estimator is pure: it reads no database, no image
// file and no ground truth; Run passes everything in:
//
//   - NewProcedure adds the static analysis: frequency equivalence classes
//     (analysis/cfg/cycleq) and each block's schedule (analysis/sched).
//   - Frequencies estimates F for every block and edge: the heuristic of
//     sec. 6.1.3, local propagation (6.1.4) and a confidence (6.1.5).
//   - Explain gives every instruction its CPI, static stalls and dynamic
//     stall candidates ("guilty until proven innocent", sec. 6.3), and the
//     procedure's summary of where its cycles went (Figure 4).
//
// Units: a frequency F is executions per P cycles, where P is the mean
// CYCLES sampling period (Profile.Periods[cycles]); F·P estimates the
// execution count. Samples are float64 because the caller may have scaled
// hosts with different periods to one.
package calc
