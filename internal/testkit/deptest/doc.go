// Package deptest holds no code, only tests that guard the shape of the
// project: which packages may import which (DESIGN.md, "Imports flow one
// way"), and that every package carries exactly one package comment.
package deptest
