/*
 * micro - microbenchmarks after Desikan, Burger and Keckler, "Measuring
 * Experimental Error in Microprocessor Simulation" (ISCA 2001), which
 * validated sim-alpha against a Compaq DS-10L (Alpha 21264) on 21 small
 * loops, each stressing one mechanism. These are our own code after the
 * paper's published descriptions (control: C-C, C-R, C-Sn; execution core:
 * E-I, E-F, E-Dn, E-DMn; memory: M-I, M-D, M-L2, M-M).
 *
 * usage: micro [scale [name]]   (defaults 1, every benchmark)
 *
 * Each benchmark's loop is one procedure named mb_NAME, so that its CPI can
 * be measured from the procedure's instructions alone (hwsim/microbench).
 * On Alpha the loops are inline assembly: gcc -O2 would otherwise remove
 * the branches and dependences a benchmark exists to keep, and the loop's
 * fetch alignment (.align 4: one 16-byte fetch block) is part of its
 * expected timing. Elsewhere (the host build that makes the expected
 * output) each loop is C computing the same value.
 */
#include <string.h>

#include "wl.h"

#if defined(__alpha__)
#define MB_ASM 1
#else
#define MB_ASM 0
#endif

/* Temporaries the loops use, besides their operands: $1-$8 and $22-$25
 * (t0-t11), $f10-$f17: caller-saved, so only the asm needs to know. */
#define MB_INT_CLOBBERS "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$22", "$23", "$24", "$25"

/* E-I: independent integer operations, 18 add + the loop's subtract and
 * branch = 20 instructions, nine chains of two: four a cycle (IPC 4). */
WL_NOINLINE
static uint64_t mb_e_i(uint64_t n)
{
#if MB_ASM
	uint64_t r;
	__asm__ volatile(
		"clr $1\n\tclr $2\n\tclr $3\n\tclr $4\n\tclr $5\n\tclr $6\n\tclr $7\n\tclr $8\n\tclr $22\n\t"
		".align 4\n"
		"1:\n\t"
		".rept 2\n\t"
		"addq $1,1,$1\n\taddq $2,1,$2\n\taddq $3,1,$3\n\taddq $4,1,$4\n\taddq $5,1,$5\n\t"
		"addq $6,1,$6\n\taddq $7,1,$7\n\taddq $8,1,$8\n\taddq $22,1,$22\n\t"
		".endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n\t"
		"addq $1,$22,%0\n"
		: "=r"(r), "+r"(n)
		:
		: MB_INT_CLOBBERS);
	return r;
#else
	return 4 * n;
#endif
}

/* E-F: independent FP adds, 16 on eight registers + subtract and branch:
 * one a cycle on the 21264's single FP add pipeline. Adding $f31 (0.0)
 * keeps the values where they are. */
WL_NOINLINE
static uint64_t mb_e_f(uint64_t n)
{
	uint64_t ops = 16 * n;
#if MB_ASM
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		".rept 2\n\t"
		"addt $f10,$f31,$f10\n\taddt $f11,$f31,$f11\n\taddt $f12,$f31,$f12\n\taddt $f13,$f31,$f13\n\t"
		"addt $f14,$f31,$f14\n\taddt $f15,$f31,$f15\n\taddt $f16,$f31,$f16\n\taddt $f17,$f31,$f17\n\t"
		".endr\n\t"
		"subq %0,1,%0\n\t"
		"bne %0,1b\n"
		: "+r"(n)
		:
		: "$f10", "$f11", "$f12", "$f13", "$f14", "$f15", "$f16", "$f17");
#endif
	return ops;
}

/* E-D1: one chain of 32 dependent adds (+ subtract, branch): one a cycle. */
WL_NOINLINE
static uint64_t mb_e_d1(uint64_t n)
{
#if MB_ASM
	uint64_t r = 0;
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		".rept 32\n\taddq %0,1,%0\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n"
		: "+r"(r), "+r"(n));
	return r;
#else
	return 32 * n;
#endif
}

/* E-D3: three interleaved chains of ten dependent adds (+ subtract,
 * branch): each instruction depends on the one three before it, so three
 * issue a cycle. */
WL_NOINLINE
static uint64_t mb_e_d3(uint64_t n)
{
#if MB_ASM
	uint64_t r;
	__asm__ volatile(
		"clr $1\n\tclr $2\n\tclr $3\n\t"
		".align 4\n"
		"1:\n\t"
		".rept 10\n\taddq $1,1,$1\n\taddq $2,1,$2\n\taddq $3,1,$3\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n\t"
		"addq $1,$2,%0\n\t"
		"addq %0,$3,%0\n"
		: "=r"(r), "+r"(n)
		:
		: MB_INT_CLOBBERS);
	return r;
#else
	return 30 * n;
#endif
}

/* E-D6: six interleaved chains of seven dependent adds (+ subtract,
 * branch): 44 instructions, bound by four a cycle, not by the chains. */
WL_NOINLINE
static uint64_t mb_e_d6(uint64_t n)
{
#if MB_ASM
	uint64_t r;
	__asm__ volatile(
		"clr $1\n\tclr $2\n\tclr $3\n\tclr $4\n\tclr $5\n\tclr $6\n\t"
		".align 4\n"
		"1:\n\t"
		".rept 7\n\taddq $1,1,$1\n\taddq $2,1,$2\n\taddq $3,1,$3\n\t"
		"addq $4,1,$4\n\taddq $5,1,$5\n\taddq $6,1,$6\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n\t"
		"addq $1,$6,%0\n"
		: "=r"(r), "+r"(n)
		:
		: MB_INT_CLOBBERS);
	return r;
#else
	return 14 * n;
#endif
}

/* E-DM1: one chain of eight dependent multiplies (+ subtract, branch):
 * one per multiply latency (7 cycles on the 21264). */
WL_NOINLINE
static uint64_t mb_e_dm1(uint64_t n)
{
#if MB_ASM
	uint64_t r = 1;
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		".rept 8\n\tmulq %0,3,%0\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n"
		: "+r"(r), "+r"(n));
	return r;
#else
	uint64_t r = 1;
	for (uint64_t i = 0; i < 8 * n; i++)
		r *= 3;
	return r;
#endif
}

/* E-DM3: three interleaved chains of eight multiplies: still one multiply
 * latency per link, three links at a time. */
WL_NOINLINE
static uint64_t mb_e_dm3(uint64_t n)
{
#if MB_ASM
	uint64_t r;
	__asm__ volatile(
		"lda $1,1($31)\n\tlda $2,1($31)\n\tlda $3,1($31)\n\t"
		".align 4\n"
		"1:\n\t"
		".rept 8\n\tmulq $1,3,$1\n\tmulq $2,5,$2\n\tmulq $3,7,$3\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n\t"
		"addq $1,$2,%0\n\t"
		"addq %0,$3,%0\n"
		: "=r"(r), "+r"(n)
		:
		: MB_INT_CLOBBERS);
	return r;
#else
	uint64_t a = 1, b = 1, c = 1;
	for (uint64_t i = 0; i < 8 * n; i++) {
		a *= 3;
		b *= 5;
		c *= 7;
	}
	return a + b + c;
#endif
}

/* E-DM6: six interleaved chains of four multiplies: 24 multiplies in four
 * latencies, near the one multiplier pipeline's one a cycle. */
WL_NOINLINE
static uint64_t mb_e_dm6(uint64_t n)
{
#if MB_ASM
	uint64_t r;
	__asm__ volatile(
		"lda $1,1($31)\n\tlda $2,1($31)\n\tlda $3,1($31)\n\t"
		"lda $4,1($31)\n\tlda $5,1($31)\n\tlda $6,1($31)\n\t"
		".align 4\n"
		"1:\n\t"
		".rept 4\n\tmulq $1,3,$1\n\tmulq $2,5,$2\n\tmulq $3,7,$3\n\t"
		"mulq $4,9,$4\n\tmulq $5,11,$5\n\tmulq $6,13,$6\n\t.endr\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n\t"
		"addq $1,$2,%0\n\taddq %0,$3,%0\n\taddq %0,$4,%0\n\t"
		"addq %0,$5,%0\n\taddq %0,$6,%0\n"
		: "=r"(r), "+r"(n)
		:
		: MB_INT_CLOBBERS);
	return r;
#else
	uint64_t v[6] = {1, 1, 1, 1, 1, 1};
	static const uint64_t k[6] = {3, 5, 7, 9, 11, 13};
	for (uint64_t i = 0; i < 4 * n; i++)
		for (int j = 0; j < 6; j++)
			v[j] *= k[j];
	return v[0] + v[1] + v[2] + v[3] + v[4] + v[5];
#endif
}

/* C-C: a branch that alternates taken and not taken (the loop counter's
 * low bit), which the tournament predictor's local history learns. */
WL_NOINLINE
static uint64_t mb_c_c(uint64_t n)
{
#if MB_ASM
	uint64_t r = 0;
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		"blbs %1,2f\n\t"
		"addq %0,1,%0\n"
		"2:\n\t"
		"subq %1,1,%1\n\t"
		"bne %1,1b\n"
		: "+r"(r), "+r"(n));
	return r;
#else
	return n / 2;
#endif
}

/* C-R: recursion 1000 deep (the paper's recur.c depth), down and back:
 * a call and a return per level, the return address through the stack. */
static volatile uint64_t mb_depth_sink;

WL_NOINLINE
static uint64_t mb_c_r_level(uint64_t d)
{
	if (d == 0)
		return 0;
	uint64_t r = mb_c_r_level(d - 1) + 1;
	__asm__ volatile("" : "+r"(r)); /* no tail call, no folding */
	return r;
}

WL_NOINLINE
static uint64_t mb_c_r(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += mb_c_r_level(1000);
	mb_depth_sink = s;
	return s;
}

/* C-Sn: a switch of ten cases compiled to a jump table, where each case is
 * taken n times in a row before the next: the jump mispredicts once per
 * change of case. */
WL_NOINLINE
static uint64_t mb_c_s(uint64_t n, uint64_t run)
{
	uint64_t s = 0, c = 0, k = 0;
	for (uint64_t i = 0; i < n; i++) {
		/* An opaque case: gcc would otherwise thread each case's
		 * update of c straight into the next case, with no jump. */
		__asm__ volatile("" : "+r"(c));
		switch (c) {
		case 0: s += 3; break;
		case 1: s ^= 5; break;
		case 2: s += s >> 3; break;
		case 3: s -= 7; break;
		case 4: s += 11; break;
		case 5: s ^= s << 1; break;
		case 6: s += 13; break;
		case 7: s -= 17; break;
		case 8: s += 19; break;
		default: s ^= 23; break;
		}
		__asm__ volatile("" : "+r"(s));
		if (++k == run) {
			k = 0;
			c = c == 9 ? 0 : c + 1;
		}
	}
	return s;
}

WL_NOINLINE static uint64_t mb_c_s1(uint64_t n) { return mb_c_s(n, 1); }
WL_NOINLINE static uint64_t mb_c_s2(uint64_t n) { return mb_c_s(n, 2); }
WL_NOINLINE static uint64_t mb_c_s3(uint64_t n) { return mb_c_s(n, 3); }

/* The memory benchmarks chase or read 64-byte nodes (one 21264 cache
 * line each), linked in address order. */
struct mb_node {
	struct mb_node *next;
	uint64_t pad[7];
};

static struct mb_node *mb_ring(uint64_t nodes)
{
	struct mb_node *r = wl_xmalloc((nodes + 1) * sizeof *r);
	/* Align to a line: malloc gives 16 bytes. */
	r = (struct mb_node *)(((uintptr_t)r + 63) & ~(uintptr_t)63);
	for (uint64_t i = 0; i < nodes; i++) {
		r[i].next = &r[(i + 1) % nodes];
		memset(r[i].pad, 0, sizeof r[i].pad);
	}
	return r;
}

/* M-I: independent loads that hit the D-cache, 16 a loop (+ subtract,
 * branch): two a cycle on the lower pipelines L0 and L1. */
WL_NOINLINE
static uint64_t mb_m_i(uint64_t n, struct mb_node *a)
{
	uint64_t loads = 16 * n;
#if MB_ASM
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		"ldq $1,0(%1)\n\tldq $2,8(%1)\n\tldq $3,16(%1)\n\tldq $4,24(%1)\n\t"
		"ldq $5,32(%1)\n\tldq $6,40(%1)\n\tldq $7,48(%1)\n\tldq $8,56(%1)\n\t"
		"ldq $1,64(%1)\n\tldq $2,72(%1)\n\tldq $3,80(%1)\n\tldq $4,88(%1)\n\t"
		"ldq $5,96(%1)\n\tldq $6,104(%1)\n\tldq $7,112(%1)\n\tldq $8,120(%1)\n\t"
		"subq %0,1,%0\n\t"
		"bne %0,1b\n"
		: "+r"(n)
		: "r"(a)
		: "memory", MB_INT_CLOBBERS);
#else
	(void)a;
#endif
	return loads;
}

/* mb_chase follows n*16 links from p, 16 dependent loads a loop. */
static inline struct mb_node *mb_chase(uint64_t n, struct mb_node *p)
{
#if MB_ASM
	__asm__ volatile(
		".align 4\n"
		"1:\n\t"
		".rept 16\n\tldq %1,0(%1)\n\t.endr\n\t"
		"subq %0,1,%0\n\t"
		"bne %0,1b\n"
		: "+r"(n), "+r"(p)
		:
		: "memory");
	return p;
#else
	for (uint64_t i = 0; i < 16 * n; i++)
		p = p->next;
	return p;
#endif
}

/* M-D: dependent loads around a 16 KB ring, D-cache hits: one per load
 * latency. */
WL_NOINLINE
static struct mb_node *mb_m_d(uint64_t n, struct mb_node *p) { return mb_chase(n, p); }

/* M-L2: dependent loads around a 1 MB ring (more than the 64 KB D-cache,
 * less than the 2 MB Bcache): one Bcache latency per load. */
WL_NOINLINE
static struct mb_node *mb_m_l2(uint64_t n, struct mb_node *p) { return mb_chase(n, p); }

/* M-M: dependent loads around an 8 MB ring, more than the Bcache: one
 * memory latency per load. */
WL_NOINLINE
static struct mb_node *mb_m_m(uint64_t n, struct mb_node *p) { return mb_chase(n, p); }

/* mb_warm walks a ring once, outside the measured procedures. */
WL_NOINLINE
static uint64_t mb_warm(struct mb_node *p, uint64_t nodes)
{
	for (uint64_t i = 0; i < nodes; i++)
		p = p->next;
	return (uint64_t)(p != NULL);
}

static int want(const char *only, const char *name)
{
	return only == NULL || strcmp(only, name) == 0;
}

int main(int argc, char **argv)
{
	uint64_t scale = wl_arg(argc, argv, 1, 1, 1000);
	const char *only = argc > 2 ? argv[2] : NULL;
	uint64_t h = WL_SEED0;
	int ran = 0;

#define MB_RUN(name, expr)                                                    \
	do {                                                                  \
		if (want(only, name)) {                                       \
			uint64_t v = (expr);                                  \
			printf("%-6s %016" PRIx64 "\n", name, v);             \
			h = wl_mix(h, v);                                     \
			ran++;                                                \
		}                                                             \
	} while (0)

	MB_RUN("C-C", mb_c_c(scale * 200000));
	MB_RUN("C-R", mb_c_r(scale * 50));
	MB_RUN("C-S1", mb_c_s1(scale * 60000));
	MB_RUN("C-S2", mb_c_s2(scale * 60000));
	MB_RUN("C-S3", mb_c_s3(scale * 60000));
	MB_RUN("E-I", mb_e_i(scale * 20000));
	MB_RUN("E-F", mb_e_f(scale * 20000));
	MB_RUN("E-D1", mb_e_d1(scale * 10000));
	MB_RUN("E-D3", mb_e_d3(scale * 10000));
	MB_RUN("E-D6", mb_e_d6(scale * 10000));
	MB_RUN("E-DM1", mb_e_dm1(scale * 10000));
	MB_RUN("E-DM3", mb_e_dm3(scale * 10000));
	MB_RUN("E-DM6", mb_e_dm6(scale * 10000));
	if (want(only, "M-I")) {
		struct mb_node *a = mb_ring(2);
		MB_RUN("M-I", mb_m_i(scale * 20000, a));
	}
	static const struct {
		const char *name;
		uint64_t nodes, loops;
		struct mb_node *(*run)(uint64_t, struct mb_node *);
	} chases[] = {
		{"M-D", 256, 10000, mb_m_d},
		{"M-L2", 16384, 3000, mb_m_l2},
		{"M-M", 131072, 1000, mb_m_m},
	};
	for (size_t i = 0; i < sizeof chases / sizeof chases[0]; i++) {
		if (!want(only, chases[i].name))
			continue;
		struct mb_node *ring = mb_ring(chases[i].nodes);
		uint64_t ok = mb_warm(ring, chases[i].nodes);
		struct mb_node *end = chases[i].run(scale * chases[i].loops, ring);
		MB_RUN(chases[i].name, ok * (uint64_t)(end - ring));
	}
	if (ran == 0) {
		fprintf(stderr, "%s: no benchmark named \"%s\"\n", argv[0], only);
		return 2;
	}
	wl_checksum("micro", h);
	return 0;
}
