package linuxhost

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Held is a command started but held before its exec, so that its events
// can be opened on its PID first and enabled by the exec (perf record's
// way): a shell waits on a pipe, then execs the command in its place.
type Held struct {
	Cmd     *exec.Cmd
	release *os.File
}

// holdScript reads one line from fd 3, closes it and execs its arguments.
const holdScript = `read -r _ <&3; exec 3<&-; exec "$@"`

// StartHeld starts argv held before its exec, with the given streams.
func StartHeld(argv []string, stdin io.Reader, stdout, stderr io.Writer) (*Held, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("linuxhost: no command")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", holdScript, "sh"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	r.Close()
	return &Held{Cmd: cmd, release: w}, nil
}

// PID is the held process's.
func (h *Held) PID() int { return h.Cmd.Process.Pid }

// Release lets the command exec.
func (h *Held) Release() error {
	_, err := h.release.Write([]byte("go\n"))
	h.release.Close()
	return err
}

// Kill ends a command that will not be released.
func (h *Held) Kill() {
	h.release.Close()
	h.Cmd.Process.Kill()
	h.Cmd.Wait()
}
