package hwsim_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// needSysroot skips a test on a machine without the Alpha cross
// toolchain's loader and C library.
func needSysroot(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(hwsim.DefaultSysroot, "lib", "ld-linux.so.2")); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
}

// buildDynamic compiles src with the cross compiler's defaults (dynamic,
// no -static) and returns the executable.
func buildDynamic(t testing.TB, name, src string, libs ...string) []byte {
	t.Helper()
	needSysroot(t)
	cc, err := exec.LookPath("alpha-linux-gnu-gcc")
	if err != nil {
		t.Skip("alpha-linux-gnu-gcc not installed")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(cc, append([]string{"-O2", "-o", bin, c}, libs...)...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const dynHello = `#include <stdio.h>
#include <math.h>
#include <dlfcn.h>
int main(int argc, char **argv) {
	double s = 0;
	for (int i = 1; i < 20000; i++) s += sqrt((double)i) * sin(i);
	printf("hello %d %.6f\n", argc, s);
	void *h = dlopen("libm.so.6.1", RTLD_NOW);
	double (*f)(double) = h ? (double (*)(double))dlsym(h, "cos") : 0;
	printf("dlopen %s %.6f\n", h ? "ok" : dlerror(), f ? f(1.0) : 0.0);
	return 3;
}
`

// TestDynamicProgram runs a dynamically linked program (the interpreter,
// libc and libm from the sysroot, libm dlopen'ed again) on both timing
// models and checks its output, exit status and loader map events: the
// program, ld.so, libc and libm, each with its build ID.
func TestDynamicProgram(t *testing.T) {
	data := buildDynamic(t, "dynhello", dynHello, "-lm")
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		t.Run(model.Name, func(t *testing.T) {
			cfg := hwsim.DefaultConfig()
			cfg.CPUs, cfg.Model = 1, model
			cfg.Files = map[string][]byte{"/bin/dynhello": data}
			if os.Getenv("DYNTRACE") != "" {
				cfg.Trace = os.Stderr
			}
			r := runWorkload(t, cfg, "dynhello", "a")
			const want = "hello 2 -145.806415\ndlopen ok 0.540302\n"
			if r.stdout != want || r.status != 3<<8 {
				t.Fatalf("status %#x, stdout %q, stderr %q, faults %v; want %q", r.status, r.stdout, r.stderr, r.m.Faults(), want)
			}
			maps := map[string]hwsim.Event{}
			for _, e := range r.events {
				if e.Kind == hwsim.EventMap && e.PID != 0 {
					maps[filepath.Base(e.Path)] = e
				}
			}
			for _, lib := range []string{"dynhello", "ld-linux.so.2", "libc.so.6.1", "libm.so.6.1"} {
				e, ok := maps[lib]
				if !ok {
					t.Errorf("no map event for %s (have %v)", lib, maps)
					continue
				}
				if !strings.HasPrefix(e.ImageID, "buildid:") || e.Size == 0 {
					t.Errorf("%s: %v", lib, e)
				}
				if lib != "dynhello" && (e.Bias == 0 || e.Bias&(alpha.PageSize-1) != 0) {
					t.Errorf("%s: bias %#x", lib, e.Bias)
				}
			}
		})
	}
}

// TestDynamicBadInterpreter: a missing or unrunnable interpreter is a
// one-line error naming the file, at spawn.
func TestDynamicBadInterpreter(t *testing.T) {
	data := buildDynamic(t, "dynhello", dynHello, "-lm")
	x86, _ := os.ReadFile("/bin/true")
	for _, tc := range []struct {
		name    string
		sysroot string
		files   map[string][]byte
		want    string
	}{
		{"no sysroot", "", nil, "/lib/ld-linux.so.2"},
		{"missing", t.TempDir(), nil, "/lib/ld-linux.so.2"},
		{"x86", "", map[string][]byte{"/lib/ld-linux.so.2": x86}, "ld-linux.so.2"},
		{"truncated", "", map[string][]byte{"/lib/ld-linux.so.2": []byte("\x7fELF\x02\x01")}, "ld-linux.so.2"},
		{"an executable", "", map[string][]byte{"/lib/ld-linux.so.2": data}, "not a shared object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hwsim.DefaultConfig()
			cfg.Sysroot = tc.sysroot
			cfg.Files = map[string][]byte{"/bin/dynhello": data}
			for k, v := range tc.files {
				cfg.Files[k] = v
			}
			m, err := hwsim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Spawn("/bin/dynhello", nil, nil)
			if !errors.Is(err, hwsim.ErrInterpreter) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Spawn = %v; want ErrInterpreter naming %s, one line", err, tc.want)
			}
			if m.Live() != 0 {
				t.Errorf("%d processes left behind", m.Live())
			}
			t.Log(err)
		})
	}
}

// TestDynamicWorkloads runs the dynamically linked build of every
// workload (workloads/dyn) with its default arguments on every model (the
// 21164, 21164A, 21164PC, 21264 and 21264A: the sysroot's glibc picks its
// routines by AT_HWCAP and amask) and compares its output and exit status with the expected files,
// which qemu-alpha -L reproduces (workloads' TestQemuDynamicOutputsMatchExpected).
// Functional runs: what the instructions compute does not depend on the
// timing model, which TestDynamicProgram runs.
func TestDynamicWorkloads(t *testing.T) {
	needSysroot(t)
	if testing.Short() {
		t.Skip("slow: 65 runs of 5-40 M instructions")
	}
	for _, model := range alpha.Models {
		for _, w := range workloads.All() {
			data, err := workloads.DynamicBinary(w.Name)
			if err != nil {
				continue // tiny: no C library
			}
			t.Run(model.Name+"/"+w.Name, func(t *testing.T) {
				t.Parallel()
				want, wantExit, err := workloads.Expected(w.Name)
				if err != nil {
					t.Fatal(err)
				}
				cfg := hwsim.DefaultConfig()
				cfg.CPUs, cfg.Model, cfg.Timing = 2, model, false
				cfg.Files = map[string][]byte{"/bin/" + w.Name: data}
				r := runWorkload(t, cfg, w.Name, w.DefaultArgs...)
				if r.stdout != string(want) || r.status != wantExit<<8 {
					t.Fatalf("status %#x (want exit %d), faults %v, stderr %q, output:\n%s",
						r.status, wantExit, r.m.Faults(), r.stderr, firstDiff(r.stdout, string(want)))
				}
			})
		}
	}
}

// TestDynamicBadLibrary: a library missing from the sysroot or of another
// architecture is ld.so's own one-line error naming it, exit status 127,
// as on Linux; nothing is mapped of it.
func TestDynamicBadLibrary(t *testing.T) {
	data := buildDynamic(t, "dynhello", dynHello, "-lm")
	x86, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		libm []byte // nil: absent
	}{{"missing", nil}, {"x86", x86}, {"truncated", []byte("\x7fELF\x02\x01\x01")}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, lib := range []string{"ld-linux.so.2", "libc.so.6.1"} {
				b, err := os.ReadFile(filepath.Join(hwsim.DefaultSysroot, "lib", lib))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(root, "lib"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "lib", lib), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.libm != nil {
				if err := os.WriteFile(filepath.Join(root, "lib", "libm.so.6.1"), tc.libm, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := hwsim.DefaultConfig()
			cfg.CPUs, cfg.Timing, cfg.Sysroot = 1, false, root
			cfg.Files = map[string][]byte{"/bin/dynhello": data}
			r := runWorkload(t, cfg, "dynhello")
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if r.status != 127<<8 || len(lines) != 1 || !strings.Contains(r.stderr, "libm.so.6.1") || len(r.m.Faults()) != 0 {
				t.Fatalf("status %#x, faults %v, stderr %q", r.status, r.m.Faults(), r.stderr)
			}
			for _, e := range r.events {
				if e.Kind == hwsim.EventMap && strings.Contains(e.Path, "libm") {
					t.Errorf("map event for a library that failed to load: %v", e)
				}
			}
			t.Log(r.stderr)
		})
	}
}

const fileCalls = `#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/uio.h>
int main(void) {
	const char *lib = "/lib/../lib/./libm.so.6.1";
	int fd = open(lib, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) { printf("open %d errno %d\n", fd, errno); return 1; }
	char h[4], t[8], a[2], b[3];
	ssize_t n = read(fd, h, 4);
	pread(fd, t, 8, 0x1000);
	struct iovec iov[2] = {{a, 2}, {b, 3}};
	ssize_t v = readv(fd, iov, 2);
	off_t end = lseek(fd, 0, SEEK_END);
	unsigned char *p = mmap(0, 16384, PROT_READ, MAP_PRIVATE, fd, 8192);
	unsigned sum = 0;
	for (int i = 0; i < 16384; i++) sum = sum * 31 + p[i];
	printf("n %zd magic %.3s size %lld end %lld v %zd %02x%02x sum %08x\n", n, h + 1,
		(long long)st.st_size, (long long)end, v, (unsigned char)a[0], (unsigned char)b[2], sum);
	printf("eacces %d\n", mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EACCES);
	printf("rofs %d\n", access(lib, W_OK) != 0 && errno == EROFS);
	printf("enoent %d\n", open("/lib/no-such.so", O_RDONLY) < 0 && errno == ENOENT);
	printf("close %d %d\n", close(fd), close(fd) != 0 && errno == EBADF);
	return 0;
}
`

// TestFileCalls: what a program reads of the simulated file system through
// open, read, pread64, readv, lseek, fstat and mmap matches qemu-alpha -L;
// the file system is read-only.
func TestFileCalls(t *testing.T) {
	data := buildDynamic(t, "filecalls", fileCalls)
	cfg := hwsim.DefaultConfig()
	cfg.CPUs, cfg.Timing = 1, false
	cfg.Files = map[string][]byte{"/bin/filecalls": data}
	r := runWorkload(t, cfg, "filecalls")
	if r.status != 0 || !strings.Contains(r.stdout, "magic ELF") {
		t.Fatalf("status %#x, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	for _, want := range []string{"eacces 1", "rofs 1", "enoent 1", "close 0 1"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("no %q in %q", want, r.stdout)
		}
	}
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("no qemu-alpha to compare with")
	}
	bin := filepath.Join(t.TempDir(), "filecalls")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(qemu, "-L", hwsim.DefaultSysroot, bin).Output()
	// qemu's file system is the host's, writable: compare the reads.
	first := func(s string) string { return strings.SplitN(s, "\n", 2)[0] }
	if err != nil || first(string(out)) != first(r.stdout) {
		t.Errorf("qemu-alpha: %q, %v\nhwsim:      %q", out, err, r.stdout)
	}
}
