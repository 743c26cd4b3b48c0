// Package report is one flurry-loadgen invocation's result: Result holds
// the machine and whichever runs took place (each mode's own result type)
// and writes them as indented JSON (WriteJSON), readable tables
// (WriteTable, each mode writing its own section) and SVG plots
// (WriteSVG).
package report
