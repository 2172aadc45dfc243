/*
 * ccdriver - a compiler-driver-like workload: many short-lived processes.
 * For each "source file" the driver fork()s and the child execve()s this same
 * program (argv[0], which the simulator sets to an absolute path such as
 * /bin/ccdriver) to run one pass: parse, opt, asm, then link. The driver
 * waitpid()s for each child before starting the next, and folds the children's
 * exit statuses into its checksum. Each child does a little real work, prints
 * one line, and exits with a status derived from its result.
 *
 * usage: ccdriver [files]                 (default 5 files: 20 children)
 *        ccdriver -pass NAME FILE SIZE    (one pass; what the driver execs)
 *
 * A profiler sees process creation, exec of the same image at a new pid,
 * exits, and start-up code (glibc's) dominating short processes.
 *
 * Where execve cannot run an Alpha binary (qemu-alpha without binfmt_misc
 * cannot), setting CCDRIVER_EXEC_FALLBACK=1 lets a child whose execve failed
 * run its pass in place, so the output stays the same; without it the child
 * reports the failure on stderr and exits 127, which changes the checksum.
 */
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl.h"

static const char *const pass_names[] = {"parse", "opt", "asm", "link"};
#define NPASSES 4

/* source makes a deterministic pseudo-program for file f: a stream of
 * tokens as small integers (0-9 operators, 10+ identifiers/constants). */
WL_NOINLINE
static uint32_t *source(uint64_t f, uint64_t size, uint64_t *n)
{
	uint32_t *tok = wl_xmalloc(size * sizeof *tok);
	wl_rng r;

	wl_seed(&r, 1000 + f);
	for (uint64_t i = 0; i < size; i++)
		tok[i] = wl_below(&r, 4) == 0 ? wl_below(&r, 10)
					      : 10 + wl_below(&r, 500);
	*n = size;
	return tok;
}

/* parse: count statements (operator 0 ends one), nesting via 1/2, and
 * distinct identifiers with a bitmap. */
WL_NOINLINE
static uint64_t pass_parse(const uint32_t *tok, uint64_t n, char *out,
			   size_t cap)
{
	uint8_t seen[64] = {0};
	uint64_t stmts = 0, depth = 0, maxdepth = 0, ids = 0, h = WL_SEED0;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t t = tok[i];
		if (t == 0)
			stmts++;
		else if (t == 1 && ++depth > maxdepth)
			maxdepth = depth;
		else if (t == 2 && depth > 0)
			depth--;
		else if (t >= 10 &&
			 !(seen[(t - 10) >> 3] & (1u << ((t - 10) & 7)))) {
			seen[(t - 10) >> 3] |= (uint8_t)(1u << ((t - 10) & 7));
			ids++;
		}
		h = wl_mix(h, t);
	}
	snprintf(out, cap, "statements %" PRIu64 " max depth %" PRIu64
		 " identifiers %" PRIu64, stmts, maxdepth, ids);
	return h;
}

/* opt: constant-fold adjacent constant pairs repeatedly until nothing
 * changes (a fixed-point loop, like a real optimizer's worklist). */
WL_NOINLINE
static uint64_t pass_opt(uint32_t *tok, uint64_t n, char *out, size_t cap)
{
	uint64_t rounds = 0, folded = 0, h = WL_SEED0;
	int changed = 1;

	while (changed && rounds < 50) {
		changed = 0;
		rounds++;
		uint64_t w = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (i + 1 < n && tok[i] >= 10 && tok[i + 1] >= 10 &&
			    (tok[i] & 1) == 0 && (tok[i + 1] & 1) == 0) {
				tok[w++] = 10 + (tok[i] + tok[i + 1]) % 500;
				i++;
				folded++;
				changed = 1;
			} else {
				tok[w++] = tok[i];
			}
		}
		n = w;
	}
	for (uint64_t i = 0; i < n; i++)
		h = wl_mix(h, tok[i]);
	snprintf(out, cap, "rounds %" PRIu64 " folded %" PRIu64
		 " tokens left %" PRIu64, rounds, folded, n);
	return h;
}

/* asm: encode each token as a 32-bit Alpha-like instruction word and
 * compute a checksum of the "object code". */
WL_NOINLINE
static uint64_t pass_asm(const uint32_t *tok, uint64_t n, char *out,
			 size_t cap)
{
	uint32_t *code = wl_xmalloc(n * sizeof *code);
	uint64_t h = WL_SEED0, branches = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t t = tok[i];
		uint32_t opcode = t < 10 ? 0x30 + t : 0x10;
		code[i] = (opcode << 26) | ((t & 31) << 21) |
			  (((uint32_t)i & 31) << 16) | (t & 0xffff);
		branches += opcode >= 0x30;
	}
	for (uint64_t i = 0; i < n; i++)
		h = wl_mix(h, code[i]);
	free(code);
	snprintf(out, cap, "words %" PRIu64 " branches %" PRIu64, n, branches);
	return h;
}

/* link: "resolve symbols": keep a sorted table of the distinct identifier
 * tokens, binary search for each token, insert the new ones. */
WL_NOINLINE
static uint64_t pass_link(const uint32_t *tok, uint64_t n, char *out,
			  size_t cap)
{
	uint32_t sym[512];
	uint64_t nsym = 0, lookups = 0, h = WL_SEED0;

	for (uint64_t i = 0; i < n && nsym < 512; i++) {
		uint32_t t = tok[i];
		if (t < 10)
			continue;
		uint64_t lo = 0, hi = nsym;
		while (lo < hi) {
			uint64_t mid = (lo + hi) / 2;
			if (sym[mid] < t)
				lo = mid + 1;
			else
				hi = mid;
		}
		lookups++;
		if (lo < nsym && sym[lo] == t)
			continue;
		for (uint64_t k = nsym; k > lo; k--)
			sym[k] = sym[k - 1];
		sym[lo] = t;
		nsym++;
	}
	for (uint64_t i = 0; i < nsym; i++)
		h = wl_mix(h, sym[i]);
	snprintf(out, cap, "symbols %" PRIu64 " lookups %" PRIu64, nsym,
		 lookups);
	return h;
}

/* run_pass does one pass in this process, prints its line and returns the
 * exit status the child reports (0..63, derived from the result). */
static int run_pass(const char *pass, uint64_t file, uint64_t size)
{
	uint64_t n, h;
	uint32_t *tok = source(file, size, &n);
	char line[160];

	if (strcmp(pass, "parse") == 0)
		h = pass_parse(tok, n, line, sizeof line);
	else if (strcmp(pass, "opt") == 0)
		h = pass_opt(tok, n, line, sizeof line);
	else if (strcmp(pass, "asm") == 0)
		h = pass_asm(tok, n, line, sizeof line);
	else if (strcmp(pass, "link") == 0)
		h = pass_link(tok, n, line, sizeof line);
	else {
		fprintf(stderr, "ccdriver: unknown pass \"%s\"\n", pass);
		free(tok);
		return 126; /* >= 64: counted as a failure by the driver */
	}
	free(tok);
	h = wl_final(h);
	printf("  [%s file%" PRIu64 ".c] %s hash %08" PRIx64 "\n", pass, file,
	       line, h & 0xffffffff);
	return (int)(h & 63);
}

/* parse_u64 accepts a decimal number in 0..max. A child's argument errors
 * must exit with a status of 64 or more, which the driver counts as a
 * failure, so the children do not use wl_arg (which exits with 2). */
static int parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x = strtoull(s, &end, 10);
	if (end == s || *end != '\0' || x > max)
		return 0;
	*v = x;
	return 1;
}

static uint64_t file_size(uint64_t f)
{
	return 8000 + 3000 * (f % 4);
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "-pass") == 0) {
		uint64_t file, size;
		if (!parse_u64(argv[3], 1ULL << 20, &file) ||
		    !parse_u64(argv[4], 1ULL << 24, &size) || size == 0) {
			fprintf(stderr, "ccdriver: bad -pass arguments\n");
			return 125;
		}
		return run_pass(argv[2], file, size);
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [files] | -pass NAME FILE SIZE\n",
			argv[0]);
		return 2;
	}
	uint64_t files = wl_arg(argc, argv, 1, 5, 10000);
	const char *fallback = getenv("CCDRIVER_EXEC_FALLBACK");
	int allow_fallback = fallback != NULL && strcmp(fallback, "1") == 0;
	uint64_t h = WL_SEED0, children = 0, failed = 0, status_sum = 0;

	printf("ccdriver: %" PRIu64 " files, %d passes each\n", files, NPASSES);
	for (uint64_t f = 0; f < files; f++) {
		for (int p = 0; p < NPASSES; p++) {
			char fbuf[24], sbuf[24];
			snprintf(fbuf, sizeof fbuf, "%" PRIu64, f);
			snprintf(sbuf, sizeof sbuf, "%" PRIu64, file_size(f));
			char *const cargv[] = {argv[0], "-pass",
					       (char *)pass_names[p], fbuf,
					       sbuf, NULL};
			/* An empty environment: the child's work must not
			 * depend on the host's. */
			char *const cenv[] = {NULL};
			/* Flush before fork, or the child inherits (and
			 * later writes out) a copy of our buffered output. */
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				fprintf(stderr, "ccdriver: fork: %s\n",
					strerror(errno));
				return 1;
			}
			if (pid == 0) {
				execve(argv[0], cargv, cenv);
				int err = errno;
				if (allow_fallback)
					exit(run_pass(pass_names[p], f,
						      file_size(f)));
				fprintf(stderr, "ccdriver: execve %s: %s\n",
					argv[0], strerror(err));
				_exit(127);
			}
			int st;
			pid_t w;
			do
				w = waitpid(pid, &st, 0);
			while (w < 0 && errno == EINTR);
			if (w != pid) {
				fprintf(stderr, "ccdriver: waitpid: %s\n",
					strerror(errno));
				return 1;
			}
			children++;
			int code = WIFEXITED(st) ? WEXITSTATUS(st)
						 : 128 + WTERMSIG(st);
			if (code >= 64)
				failed++;
			status_sum += (uint64_t)code;
			h = wl_mix(h, (uint64_t)code);
		}
	}
	printf("ccdriver: %" PRIu64 " children, %" PRIu64
	       " failed, exit status sum %" PRIu64 "\n", children, failed,
	       status_sum);
	wl_checksum("ccdriver", h);
	return failed == 0 ? 0 : 1;
}
