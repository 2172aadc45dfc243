// Package lint holds the project's layering rules as data and checks the
// module's import graph against them (lint_test.go runs the check on
// every `go test ./...`). The table in rules.go is the single statement of
// which package may import what; docs/architecture.md describes it and
// points here, so the doc cannot go stale without a test failing.
package lint

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Package is one node of the import graph: its direct imports and, for
// transitive rules, every package it depends on (non-test code only).
type Package struct {
	Path    string
	Imports []string
	Deps    []string
}

// Rule forbids the packages matching From (less Except) to import the
// packages matching Forbid (less Allow): directly, or anywhere in their
// dependencies when Transitive. A pattern is an import path, or a path
// ending in "/..." for the package and everything below it.
type Rule struct {
	Name       string
	From       []string
	Except     []string
	Forbid     []string
	Allow      []string
	Transitive bool
	// Why is the reason, printed with a violation.
	Why string
}

// Violation is one import a rule forbids.
type Violation struct {
	Rule     string
	Importer string
	Imported string
	// Transitive: Imported is a dependency, not a direct import.
	Transitive bool
	Why        string
}

func (v Violation) String() string {
	verb := "imports"
	if v.Transitive {
		verb = "depends on"
	}
	return fmt.Sprintf("%s %s %s: breaks %q (%s)", v.Importer, verb, v.Imported, v.Rule, v.Why)
}

// match reports whether path matches pattern.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// Check returns every import in graph that a rule forbids, sorted.
func Check(graph []Package, rules []Rule) []Violation {
	var out []Violation
	for _, r := range rules {
		for _, p := range graph {
			if !matchAny(r.From, p.Path) || matchAny(r.Except, p.Path) {
				continue
			}
			imported := p.Imports
			if r.Transitive {
				imported = p.Deps
			}
			for _, imp := range imported {
				if matchAny(r.Forbid, imp) && !matchAny(r.Allow, imp) {
					out = append(out, Violation{Rule: r.Name, Importer: p.Path, Imported: imp, Transitive: r.Transitive, Why: r.Why})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Importer != out[j].Importer {
			return out[i].Importer < out[j].Importer
		}
		if out[i].Imported != out[j].Imported {
			return out[i].Imported < out[j].Imported
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// Unmatched returns the patterns of rules' From that match no package of
// graph: a rule about a package that was renamed or moved checks nothing,
// and should be updated with it.
func Unmatched(graph []Package, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		for _, pat := range r.From {
			if !slices.ContainsFunc(graph, func(p Package) bool { return match(pat, p.Path) }) {
				out = append(out, r.Name+": "+pat)
			}
		}
	}
	return out
}
