package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// allCommands is every command under root, root included, depth first,
// with cobra's own help and completion commands added as Execute would.
func allCommands(root *cobra.Command) []*cobra.Command {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return all
}

// TestEveryCommandIsDocumented: a description, a long description and an
// example on every command, positional arguments named in the usage line,
// and boolean flags shown as --flag, not --flag[=true|false].
func TestEveryCommandIsDocumented(t *testing.T) {
	root := newRootCommand()
	decorateBuiltins(root)
	cmds := allCommands(root)
	if len(cmds) < 20 {
		t.Fatalf("walked %d commands; the tree is not what this test expects", len(cmds))
	}
	for _, c := range cmds {
		path := c.CommandPath()
		if strings.TrimSpace(c.Short) == "" {
			t.Errorf("%s: no Short", path)
		}
		if strings.TrimSpace(c.Long) == "" {
			t.Errorf("%s: no Long", path)
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example", path)
		}
		// The examples parse as the documents' commands do (docs_test.go).
		for _, ex := range extractCommands(path, parseMark+"\n```sh\n"+c.Example+"\n```\n") {
			if err := checkParse(ex); err != nil {
				t.Errorf("%s: example %q: %v", path, ex.text, err)
			}
		}
		var help strings.Builder
		c.SetOut(&help)
		if err := c.Help(); err != nil {
			t.Fatalf("%s: help: %v", path, err)
		}
		if strings.Contains(help.String(), "[=true|false]") {
			t.Errorf("%s: help shows [=true|false]:\n%s", path, help.String())
		}
		if takesArgs(c) && !strings.ContainsAny(strings.TrimPrefix(c.Use, c.Name()), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Errorf("%s takes positional arguments but its usage line %q names none", path, c.Use)
		}
	}
}

// takesArgs reports whether c accepts a positional argument, by asking its
// own Args validator (cobra.NoArgs rejects one; a command with
// subcommands and no Run takes none either).
func takesArgs(c *cobra.Command) bool {
	if !c.Runnable() || c.Name() == "help" || c.Args == nil {
		return false
	}
	return c.Args(c, []string{"x"}) == nil || c.Args(c, []string{"x", "y"}) == nil
}

// TestHelpOutputHasNoBoolValueSyntax runs --help through Execute, as a
// user would, on a command with boolean flags.
func TestHelpOutputHasNoBoolValueSyntax(t *testing.T) {
	out, _, err := run(t, "node", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--stats ") || strings.Contains(out, "[=true|false]") {
		t.Fatalf("node --help:\n%s", out)
	}
}
