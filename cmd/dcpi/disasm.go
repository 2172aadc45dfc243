package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/hwsim/alpha/disasm"
	"dcpi/simhost"
	"dcpi/workloads"
)

func newDisasmCommand() *cobra.Command {
	var (
		sections []string
		symbols  bool
		pal      string
	)
	cmd := &cobra.Command{
		Use:   "disasm [flags] FILE",
		Short: "Disassemble an Alpha ELF file as alpha-linux-gnu-objdump -d does",
		Long: `Disassemble the code of an Alpha ELF executable or object file.

The listing is byte for byte what alpha-linux-gnu-objdump -d prints (binutils
2.40): the file-format banner, "Disassembly of section" headers, a label line
at every symbol, and one line per instruction with its address, its bytes and
its text. Registers have their software names (t0, a0, sp, $f1), and objdump's
pseudo-instructions are used (nop, unop, mov, clr, negq, fmov, ret, br).
Words that are no instruction print as ".long 0x...", runs of zero bytes as
"...". So

  dcpi disasm FILE | diff - <(alpha-linux-gnu-objdump -d FILE)

prints nothing.

FILE is a path, or the name of an embedded workload (` + strings.Join(workloads.Names(), ", ") + `).`,
		Example: `  dcpi disasm workloads/bin/hello
  dcpi disasm -j .text stream
  dcpi disasm --symbols=false ./a.out
  dcpi disasm --pal ev5 palcode.o`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := disasm.Options{Sections: sections, NoSymbols: !symbols}
			var err error
			if opt.PAL, err = disasm.ParsePAL(pal); err != nil {
				return fmt.Errorf("--pal %w", err)
			}
			data, _, err := simhost.ReadELF(args[0])
			if err != nil {
				return err
			}
			return disasm.File(cmd.OutOrStdout(), bytes.NewReader(data), args[0], opt)
		},
	}
	cmd.Flags().StringArrayVarP(&sections, "section", "j", nil, "print only section `NAME` (repeatable; default: every code section)")
	cmd.Flags().BoolVar(&symbols, "symbols", true, "label functions and name branch targets (<sym+off>) from the symbol table")
	cmd.Flags().StringVar(&pal, "pal", "none", "PALcode-mode mnemonics for opcodes 0x19, 0x1B, 0x1D-0x1F: none (pal19...), ev4, ev5 or ev6, as objdump -m alpha:evN")
	return cmd
}
