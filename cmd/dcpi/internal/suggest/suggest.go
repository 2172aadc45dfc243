// Package suggest adds "did you mean" to dcpi's command line: a mistyped
// flag or subcommand is answered with the names it is close to, as git
// and perf answer. Cobra suggests only the root's subcommands; this
// package covers flags and the subcommands of every other command. It
// owns no command: the caller installs it on its root.
package suggest

import (
	"dcpi/internal/editdist"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// MaxDistance is how far (in edits) a name may be from what was typed
// and still be suggested: cobra's SuggestionsMinimumDistance default.
const MaxDistance = 2

// Install makes root and every command below it suggest: an unknown flag's
// error names the closest flags of its command, and a command that only
// groups subcommands refuses an unknown one (instead of printing its help
// and succeeding) in one line with the closest of them.
func Install(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case !c.HasSubCommands():
		case !c.Runnable(): // the root too: cobra's own suggestion takes four lines
			c.Args = unknownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		case c.Args != nil:
			// cobra.NoArgs's "unknown command", with suggestions.
			args := c.Args
			c.Args = func(cmd *cobra.Command, a []string) error {
				err := args(cmd, a)
				if err != nil && len(a) > 0 && strings.HasPrefix(err.Error(), "unknown command") {
					return unknownSubcommand(cmd, a)
				}
				return err
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand refuses an argument given to a command that only
// groups subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if s := Closest(args[0], names); len(s) > 0 {
		return fmt.Errorf("%s (did you mean %s?)", msg, strings.Join(s, " or "))
	}
	return fmt.Errorf("%s (its commands: %s)", msg, strings.Join(names, ", "))
}

// flagError adds the closest flags of cmd to pflag's "unknown flag" error.
func flagError(cmd *cobra.Command, err error) error {
	const prefix = "unknown flag: --"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	typed := strings.TrimPrefix(msg, prefix)
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	if close := Closest(typed, names); len(close) > 0 {
		return fmt.Errorf("%w (did you mean --%s?)", err, strings.Join(close, " or --"))
	}
	return err
}

// Closest are the names within MaxDistance edits of typed, or that begin
// with it or it with them (--limi, --limits for --limit), nearest first:
// those one edit away, or else those as near as the nearest, at most 3.
func Closest(typed string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	var out []cand
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || n == typed {
			continue
		}
		seen[n] = true
		d := editdist.Distance(typed, n)
		prefix := len(typed) >= 3 && (strings.HasPrefix(n, typed) || strings.HasPrefix(typed, n))
		if d <= MaxDistance || prefix {
			out = append(out, cand{n, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d || out[i].d == out[j].d && out[i].name < out[j].name })
	// The nearest only: "lst" is list, not list or cut.
	for i := range out {
		if i == 3 || out[i].d > out[0].d && out[i].d > 1 {
			out = out[:i]
			break
		}
	}
	res := make([]string, len(out))
	for i, c := range out {
		res[i] = c.name
	}
	return res
}
