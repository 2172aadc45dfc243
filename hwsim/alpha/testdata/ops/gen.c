/*
 * gen.c: reference vectors for dcpi/hwsim/alpha's intops.go and fpops.go.
 *
 * Build and run (fpops_test.go's TestOpsRegenerate does this):
 *   alpha-linux-gnu-gcc -O1 -mcpu=ev67 -static -Wl,--no-relax gen.c -o gen
 *   qemu-alpha ./gen | gzip -9n > vectors.txt.gz
 *
 * Every line is one instruction applied once:
 *   mnemonic opcode function a b fpcr_in result fpcr_out
 * in hex. opcode and function are read back from the assembled instruction
 * word, so they are what the assembler encoded for the mnemonic. For FP
 * operates a and b are Fa and Fb in register format, fpcr_in is written
 * with MT_FPCR before and fpcr_out read with MF_FPCR after. For loads a is
 * the memory datum, for stores the register. There are no STF vectors:
 * qemu 7.2's STF converts the address instead of the register. For integer
 * operates fpcr_in is 0 and fpcr_out is 1 when the /V form trapped. "trap"
 * as the result means the instruction raised SIGFPE: qemu does that for a
 * non-/S instruction whose qualifiers enable an exception it raised (here
 * only CVTQL/V overflowing); /S instructions run with every FPCR trap
 * disabled, as Linux starts a program, and never trap.
 *
 * Inputs are edge values and a fixed linear congruential generator, so the
 * output is deterministic.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t u64;
typedef uint32_t u32;
typedef void (*opfn)(const u64 *a, const u64 *b, u64 *r);

/* FP operates: Fa in $f10, Fb in $f11, result from $f12. */
#define X3(id, insn)                                                          \
	static void id(const u64 *a, const u64 *b, u64 *r)                    \
	{                                                                     \
		__asm__ volatile("ldt $f10,%1\n\tldt $f11,%2\n\t" insn        \
				 " $f10,$f11,$f12\n\tstt $f12,%0"             \
				 : "=m"(*r)                                   \
				 : "m"(*a), "m"(*b)                           \
				 : "$f10", "$f11", "$f12", "memory");         \
	}
#define X2(id, insn)                                                          \
	static void id(const u64 *a, const u64 *b, u64 *r)                    \
	{                                                                     \
		(void)a;                                                      \
		__asm__ volatile("ldt $f11,%1\n\t" insn " $f11,$f12\n\t"      \
				 "stt $f12,%0"                                \
				 : "=m"(*r)                                   \
				 : "m"(*b)                                    \
				 : "$f11", "$f12", "memory");                 \
	}
/* FCMOVxx Fa, Fb, Fc with Fc = 0 before: the result is Fb or 0. */
static const u64 zero64;
#define XC(id, insn)                                                          \
	static void id(const u64 *a, const u64 *b, u64 *r)                    \
	{                                                                     \
		__asm__ volatile("ldt $f10,%1\n\tldt $f11,%2\n\t"             \
				 "ldt $f12,%3\n\t" insn                       \
				 " $f10,$f11,$f12\n\tstt $f12,%0"             \
				 : "=m"(*r)                                   \
				 : "m"(*a), "m"(*b), "m"(zero64)              \
				 : "$f10", "$f11", "$f12", "memory");         \
	}
#define FP_OPS(X3, X2, XC) \
	X3(addt_suic, "addt/suic") \
	X3(addt_suim, "addt/suim") \
	X3(addt_sui, "addt/sui") \
	X3(addt_suid, "addt/suid") \
	X3(subt_suic, "subt/suic") \
	X3(subt_suim, "subt/suim") \
	X3(subt_sui, "subt/sui") \
	X3(subt_suid, "subt/suid") \
	X3(mult_suic, "mult/suic") \
	X3(mult_suim, "mult/suim") \
	X3(mult_sui, "mult/sui") \
	X3(mult_suid, "mult/suid") \
	X3(divt_suic, "divt/suic") \
	X3(divt_suim, "divt/suim") \
	X3(divt_sui, "divt/sui") \
	X3(divt_suid, "divt/suid") \
	X3(adds_suic, "adds/suic") \
	X3(adds_suim, "adds/suim") \
	X3(adds_sui, "adds/sui") \
	X3(adds_suid, "adds/suid") \
	X3(subs_suic, "subs/suic") \
	X3(subs_suim, "subs/suim") \
	X3(subs_sui, "subs/sui") \
	X3(subs_suid, "subs/suid") \
	X3(muls_suic, "muls/suic") \
	X3(muls_suim, "muls/suim") \
	X3(muls_sui, "muls/sui") \
	X3(muls_suid, "muls/suid") \
	X3(divs_suic, "divs/suic") \
	X3(divs_suim, "divs/suim") \
	X3(divs_sui, "divs/sui") \
	X3(divs_suid, "divs/suid") \
	X3(addt, "addt") \
	X3(addt_c, "addt/c") \
	X3(addt_m, "addt/m") \
	X3(addt_d, "addt/d") \
	X3(subt, "subt") \
	X3(subt_c, "subt/c") \
	X3(subt_m, "subt/m") \
	X3(subt_d, "subt/d") \
	X3(mult, "mult") \
	X3(mult_c, "mult/c") \
	X3(mult_m, "mult/m") \
	X3(mult_d, "mult/d") \
	X3(divt, "divt") \
	X3(divt_c, "divt/c") \
	X3(divt_m, "divt/m") \
	X3(divt_d, "divt/d") \
	X3(adds, "adds") \
	X3(adds_c, "adds/c") \
	X3(adds_m, "adds/m") \
	X3(adds_d, "adds/d") \
	X3(muls, "muls") \
	X3(muls_c, "muls/c") \
	X3(muls_m, "muls/m") \
	X3(muls_d, "muls/d") \
	X3(divs, "divs") \
	X3(divs_c, "divs/c") \
	X3(divs_m, "divs/m") \
	X3(divs_d, "divs/d") \
	X3(addt_su, "addt/su") \
	X3(mult_su, "mult/su") \
	X3(adds_su, "adds/su") \
	X2(sqrtt_suic, "sqrtt/suic") \
	X2(sqrts_suic, "sqrts/suic") \
	X2(cvtts_suic, "cvtts/suic") \
	X2(cvtqt_suic, "cvtqt/suic") \
	X2(cvtqs_suic, "cvtqs/suic") \
	X2(sqrtt_suim, "sqrtt/suim") \
	X2(sqrts_suim, "sqrts/suim") \
	X2(cvtts_suim, "cvtts/suim") \
	X2(cvtqt_suim, "cvtqt/suim") \
	X2(cvtqs_suim, "cvtqs/suim") \
	X2(sqrtt_sui, "sqrtt/sui") \
	X2(sqrts_sui, "sqrts/sui") \
	X2(cvtts_sui, "cvtts/sui") \
	X2(cvtqt_sui, "cvtqt/sui") \
	X2(cvtqs_sui, "cvtqs/sui") \
	X2(sqrtt_suid, "sqrtt/suid") \
	X2(sqrts_suid, "sqrts/suid") \
	X2(cvtts_suid, "cvtts/suid") \
	X2(cvtqt_suid, "cvtqt/suid") \
	X2(cvtqs_suid, "cvtqs/suid") \
	X2(cvttq_svic, "cvttq/svic") \
	X2(cvttq_svim, "cvttq/svim") \
	X2(cvttq_svi, "cvttq/svi") \
	X2(cvttq_svid, "cvttq/svid") \
	X2(cvttq_svc, "cvttq/svc") \
	X2(cvttq_c, "cvttq/c") \
	X2(cvttq_v, "cvttq/v") \
	X2(cvtqt_c, "cvtqt/c") \
	X2(cvtqs_c, "cvtqs/c") \
	X2(cvtts_c, "cvtts/c") \
	X2(sqrtt_c, "sqrtt/c") \
	X2(cvtqt_m, "cvtqt/m") \
	X2(cvtqs_m, "cvtqs/m") \
	X2(cvtts_m, "cvtts/m") \
	X2(sqrtt_m, "sqrtt/m") \
	X2(cvtqt_d, "cvtqt/d") \
	X2(cvtqs_d, "cvtqs/d") \
	X2(cvtts_d, "cvtts/d") \
	X2(sqrtt_d, "sqrtt/d") \
	X2(cvtts, "cvtts") \
	X2(sqrtt, "sqrtt") \
	X2(cvtqt, "cvtqt") \
	X2(cvtqs, "cvtqs") \
	X2(cvtst_s, "cvtst/s") \
	X2(cvtst, "cvtst") \
	X3(cmptun_su, "cmptun/su") \
	X3(cmptun, "cmptun") \
	X3(cmpteq_su, "cmpteq/su") \
	X3(cmpteq, "cmpteq") \
	X3(cmptlt_su, "cmptlt/su") \
	X3(cmptlt, "cmptlt") \
	X3(cmptle_su, "cmptle/su") \
	X3(cmptle, "cmptle") \
	X2(cvtql, "cvtql") \
	X2(cvtql_v, "cvtql/v") \
	X2(cvtql_sv, "cvtql/sv") \
	X2(cvtlq, "cvtlq") \
	X3(cpys, "cpys") \
	X3(cpysn, "cpysn") \
	X3(cpyse, "cpyse") \
	XC(fcmoveq, "fcmoveq") \
	XC(fcmovne, "fcmovne") \
	XC(fcmovlt, "fcmovlt") \
	XC(fcmovge, "fcmovge") \
	XC(fcmovle, "fcmovle") \
	XC(fcmovgt, "fcmovgt")

FP_OPS(X3, X2, XC)
#undef X3
#undef X2
#undef XC

/* Integer operates: Ra in $1, Rb in $2, result from $3. */
#define I3(id, insn)                                                          \
	static void id(const u64 *a, const u64 *b, u64 *r)                    \
	{                                                                     \
		__asm__ volatile(".arch ev67\n\tldq $1,%1\n\tldq $2,%2\n\t"   \
				 insn " $1,$2,$3\n\tstq $3,%0"                \
				 : "=m"(*r)                                   \
				 : "m"(*a), "m"(*b)                           \
				 : "$1", "$2", "$3", "memory");               \
	}
#define I2(id, insn)                                                          \
	static void id(const u64 *a, const u64 *b, u64 *r)                    \
	{                                                                     \
		(void)a;                                                      \
		__asm__ volatile(".arch ev67\n\tldq $2,%1\n\t" insn           \
				 " $2,$3\n\tstq $3,%0"                        \
				 : "=m"(*r)                                   \
				 : "m"(*b)                                    \
				 : "$2", "$3", "memory");                     \
	}
#define INT_OPS(X3, X2)                                                       \
	X3(extbl, "extbl") X3(extwl, "extwl") X3(extll, "extll")              \
	X3(extql, "extql") X3(extwh, "extwh") X3(extlh, "extlh")              \
	X3(extqh, "extqh") X3(insbl, "insbl") X3(inswl, "inswl")              \
	X3(insll, "insll") X3(insql, "insql") X3(inswh, "inswh")              \
	X3(inslh, "inslh") X3(insqh, "insqh") X3(mskbl, "mskbl")              \
	X3(mskwl, "mskwl") X3(mskll, "mskll") X3(mskql, "mskql")              \
	X3(mskwh, "mskwh") X3(msklh, "msklh") X3(mskqh, "mskqh")              \
	X3(zap, "zap") X3(zapnot, "zapnot") X3(cmpbge, "cmpbge")              \
	X3(umulh, "umulh") X3(minub8, "minub8") X3(minsb8, "minsb8")          \
	X3(minuw4, "minuw4") X3(minsw4, "minsw4") X3(maxub8, "maxub8")        \
	X3(maxsb8, "maxsb8") X3(maxuw4, "maxuw4") X3(maxsw4, "maxsw4")        \
	X3(perr, "perr") X2(pklb, "pklb") X2(pkwb, "pkwb")                    \
	X2(unpkbl, "unpkbl") X2(unpkbw, "unpkbw") X2(ctpop, "ctpop")          \
	X2(ctlz, "ctlz") X2(cttz, "cttz") X2(sextb, "sextb")                  \
	X2(sextw, "sextw")
INT_OPS(I3, I2)

/* The /V forms, each with its plain form for the written result. */
#define OVF_OPS(X)                                                            \
	X(addl, "addl") X(addl_v, "addl/v") X(subl, "subl")                   \
	X(subl_v, "subl/v") X(mull, "mull") X(mull_v, "mull/v")               \
	X(addq, "addq") X(addq_v, "addq/v") X(subq, "subq")                   \
	X(subq_v, "subq/v") X(mulq, "mulq") X(mulq_v, "mulq/v")
OVF_OPS(I3)

/* Loads and stores between memory format and register format. */
static void lds(const u64 *a, const u64 *b, u64 *r)
{
	u32 m = (u32)*a;
	(void)b;
	__asm__ volatile("lds $f12,%1\n\tstt $f12,%0" : "=m"(*r) : "m"(m) : "$f12", "memory");
}
static void sts(const u64 *a, const u64 *b, u64 *r)
{
	u32 m;
	(void)b;
	__asm__ volatile("ldt $f12,%1\n\tsts $f12,%0" : "=m"(m) : "m"(*a) : "$f12", "memory");
	*r = m;
}
static void ldf(const u64 *a, const u64 *b, u64 *r)
{
	u32 m = (u32)*a;
	(void)b;
	__asm__ volatile("ldf $f12,%1\n\tstt $f12,%0" : "=m"(*r) : "m"(m) : "$f12", "memory");
}
static void ldg(const u64 *a, const u64 *b, u64 *r)
{
	(void)b;
	__asm__ volatile("ldg $f12,%1\n\tstt $f12,%0" : "=m"(*r) : "m"(*a) : "$f12", "memory");
}
static void stg(const u64 *a, const u64 *b, u64 *r)
{
	(void)b;
	__asm__ volatile("ldt $f12,%1\n\tstg $f12,%0" : "=m"(*r) : "m"(*a) : "$f12", "memory");
}
static void itofs(const u64 *a, const u64 *b, u64 *r)
{
	(void)b;
	__asm__ volatile(".arch ev67\n\tldq $1,%1\n\titofs $1,$f12\n\tstt $f12,%0"
			 : "=m"(*r) : "m"(*a) : "$1", "$f12", "memory");
}
static void ftois(const u64 *a, const u64 *b, u64 *r)
{
	(void)b;
	__asm__ volatile(".arch ev67\n\tldt $f10,%1\n\tftois $f10,$3\n\tstq $3,%0"
			 : "=m"(*r) : "m"(*a) : "$3", "$f10", "memory");
}

struct op {
	const char *name;
	opfn f;
	unsigned opc, fn;
};

static struct op ops[] = {
#define E(id, insn) {insn, id, 0, 0},
	FP_OPS(E, E, E) INT_OPS(E, E) OVF_OPS(E)
#undef E
	{"lds", lds, 0x22, 0}, {"sts", sts, 0x26, 0},
	{"ldf", ldf, 0x20, 0},
	{"ldg", ldg, 0x21, 0}, {"stg", stg, 0x25, 0},
	{"itofs", itofs, 0, 0}, {"ftois", ftois, 0, 0},
	{0, 0, 0, 0},
};

/* Fill in opcode and function from the first operate word in the body. */
static void decode_ops(void)
{
	for (struct op *o = ops; o->name; o++) {
		const u32 *w = (const u32 *)(void *)o->f;
		if (o->opc != 0)
			continue;
		for (int i = 0; i < 32; i++) {
			unsigned opc = w[i] >> 26;
			if ((opc >= 0x10 && opc <= 0x17) || opc == 0x1c) {
				o->opc = opc;
				o->fn = (opc >= 0x14 && opc <= 0x17) ? (w[i] >> 5) & 0x7ff : (w[i] >> 5) & 0x7f;
				break;
			}
		}
		if (o->opc == 0) {
			fprintf(stderr, "no operate word in %s\n", o->name);
			o->opc = 0xff;
		}
	}
}

static struct op *find(const char *name)
{
	for (struct op *o = ops; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	fprintf(stderr, "unknown op %s\n", name);
	return 0;
}

static void set_fpcr(u64 v)
{
	__asm__ volatile("ldt $f10,%0\n\tmt_fpcr $f10\n\texcb" : : "m"(v) : "$f10", "memory");
}

static u64 get_fpcr(void)
{
	u64 v;
	__asm__ volatile("excb\n\tmf_fpcr $f10\n\texcb\n\tstt $f10,%0" : "=m"(v) : : "$f10", "memory");
	return v;
}

static sigjmp_buf trap_jb;
static void on_fpe(int sig)
{
	(void)sig;
	siglongjmp(trap_jb, 1);
}

/* apply runs op once and prints its line. It returns the FPCR after. */
static u64 apply(const char *name, u64 a, u64 b, u64 fpcr)
{
	static struct op *last;
	struct op *o = last && strcmp(last->name, name) == 0 ? last : find(name);
	volatile u64 r = 0, out;
	volatile int trapped = 0;
	if (!o)
		return 0;
	last = o;
	set_fpcr(fpcr);
	if (sigsetjmp(trap_jb, 1) == 0) {
		u64 rr;
		o->f(&a, &b, &rr);
		r = rr;
	} else {
		trapped = 1;
	}
	out = get_fpcr();
	if (trapped)
		printf("%s %x %x %llx %llx %llx trap %llx\n", o->name, o->opc, o->fn,
		       (unsigned long long)a, (unsigned long long)b, (unsigned long long)fpcr,
		       (unsigned long long)out);
	else
		printf("%s %x %x %llx %llx %llx %llx %llx\n", o->name, o->opc, o->fn,
		       (unsigned long long)a, (unsigned long long)b, (unsigned long long)fpcr,
		       (unsigned long long)r, (unsigned long long)out);
	return out;
}

/* apply_v runs a /V integer op and its plain form and prints one line. */
static void apply_v(const char *plain, const char *v, u64 a, u64 b)
{
	struct op *p = find(plain), *o = find(v);
	u64 r;
	volatile int trapped = 0;
	p->f(&a, &b, &r);
	if (sigsetjmp(trap_jb, 1) == 0) {
		u64 rr;
		o->f(&a, &b, &rr);
	} else {
		trapped = 1;
	}
	printf("%s %x %x %llx %llx 0 %llx %x\n", o->name, o->opc, o->fn, (unsigned long long)a,
	       (unsigned long long)b, (unsigned long long)r, trapped);
}

/* FPCR bits (Linux asm/fpu.h). */
#define DNOD (1ull << 47)
#define DNZ (1ull << 48)
#define INVD (1ull << 49)
#define DZED (1ull << 50)
#define OVFD (1ull << 51)
#define INV (1ull << 52)
#define DZE (1ull << 53)
#define OVF (1ull << 54)
#define UNDZ (1ull << 60)
#define UNFD (1ull << 61)
#define INED (1ull << 62)
#define DISABLED (INVD | DZED | OVFD | UNFD | INED | DNOD)
#define DYN(m) ((u64)(m) << 58)
#define CHOPPED 0
#define MINUS 1
#define NORMAL 2
#define PLUS 3

static u64 lcg = 0x0123456789abcdefull;
static u64 rnd(void)
{
	u64 hi, lo;
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	hi = lcg >> 32;
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	lo = lcg >> 32;
	return hi << 32 | lo;
}

#define FRAC ((1ull << 52) - 1)

static u64 rand_frac(int bits)
{
	u64 m = rnd() & ((1ull << bits) - 1);
	switch (rnd() % 6) {
	case 0: /* few significant bits: exact results, ties */
		m &= ~((1ull << (bits - 1 - rnd() % 8)) - 1);
		break;
	case 1: /* runs of ones */
		m |= ((1ull << (rnd() % bits)) - 1);
		break;
	}
	return m;
}

/* rand_t returns a T datum, weighted toward interesting exponents. */
static u64 rand_t_exp(int near)
{
	u64 s = rnd() & (1ull << 63);
	int e;
	if (near >= 0) {
		e = near + (int)(rnd() % 7) - 3;
	} else {
		switch (rnd() % 10) {
		case 0: case 1: case 2: case 3: e = 1023 + (int)(rnd() % 61) - 30; break;
		case 4: e = (int)(rnd() % 64); break;
		case 5: e = 2046 - (int)(rnd() % 64); break;
		case 6: e = (int)(rnd() % 2048); break;
		case 7: e = 0; break;
		case 8: e = 1023 + (int)(rnd() % 129) - 64; break;
		default: e = 1023 + (int)(rnd() % 2000) - 1000; break;
		}
	}
	if (e < 0)
		e = 0;
	if (e > 2047)
		e = 2047;
	return s | (u64)e << 52 | rand_frac(52);
}
static u64 rand_t(void) { return rand_t_exp(-1); }

/* rand_s returns an S memory datum, weighted like rand_t. */
static u32 rand_s_exp(int near)
{
	u32 s = (u32)(rnd() & 1) << 31;
	int e;
	if (near >= 0) {
		e = near + (int)(rnd() % 7) - 3;
	} else {
		switch (rnd() % 8) {
		case 0: case 1: case 2: e = 127 + (int)(rnd() % 41) - 20; break;
		case 3: e = (int)(rnd() % 30); break;
		case 4: e = 254 - (int)(rnd() % 30); break;
		case 5: e = (int)(rnd() % 256); break;
		case 6: e = 0; break;
		default: e = 127 + (int)(rnd() % 200) - 100; break;
		}
	}
	if (e < 0)
		e = 0;
	if (e > 255)
		e = 255;
	return s | (u32)e << 23 | (u32)rand_frac(23);
}

static u64 s_reg(u32 m)
{
	u64 a = m, r;
	lds(&a, 0, &r);
	return r;
}

static const u64 t_edges[] = {
	0x0000000000000000ull, 0x8000000000000000ull, /* +-0 */
	0x0000000000000001ull, 0x8000000000000001ull, /* +-min denormal */
	0x000fffffffffffffull, 0x0008000000000000ull, /* max, mid denormal */
	0x0010000000000000ull, 0x8010000000000000ull, /* +-min normal */
	0x0010000000000001ull, 0x001fffffffffffffull,
	0x3ff0000000000000ull, 0xbff0000000000000ull, /* +-1 */
	0x3ff0000000000001ull, 0x3fefffffffffffffull, /* 1+ulp, 1-ulp/2 */
	0x3ff8000000000000ull, 0x4000000000000000ull, /* 1.5, 2 */
	0xc008000000000000ull, 0x3fe0000000000000ull, /* -3, 0.5 */
	0xbfe0000000000000ull, 0x3fd5555555555555ull, /* -0.5, 1/3 */
	0x4004000000000000ull, 0xc004000000000000ull, /* +-2.5 */
	0x3ca0000000000000ull, 0x3c90000000000000ull, /* 2^-53, 2^-54 */
	0x7fefffffffffffffull, 0xffefffffffffffffull, /* +-max */
	0x7fe0000000000000ull, 0x2000000000000000ull, /* 2^1023, 2^-511 */
	0x1ff0000000000000ull, 0x5ff0000000000000ull, /* 2^-512, 2^512 */
	0x7ff0000000000000ull, 0xfff0000000000000ull, /* +-inf */
	0x7ff8000000000000ull, 0xfff8000000000123ull, /* qNaN */
	0x7ff0000000000001ull, 0xfff4000000000000ull, /* sNaN */
	0x43e0000000000000ull, 0xc3e0000000000000ull, /* +-2^63 */
	0x43dfffffffffffffull, 0xc3e0000000000001ull,
	0x43f0000000000000ull, 0x4330000000000001ull, /* 2^64, 2^52+1 */
	0x400921fb54442d18ull, 0x0360000000000000ull, /* pi, 2^-969 */
	0x47efffffe0000000ull, 0x3810000000000000ull, /* FLT_MAX, FLT_MIN */
	0x3ff0000010000000ull, 0x47effffff0000000ull, /* S ties */
};
#define NT (sizeof t_edges / sizeof t_edges[0])

static const u32 s_edges[] = {
	0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00400000,
	0x00800000, 0x80800000, 0x00800001, 0x3f800000, 0xbf800000, 0x3f800001,
	0x3f7fffff, 0x3fc00000, 0x40000000, 0xc0400000, 0x3f000000, 0x3eaaaaab,
	0x40200000, 0xc0200000, 0x33800000, 0x33000000, 0x7f7fffff, 0xff7fffff,
	0x7f000000, 0x1f800000, 0x5f800000, 0x7f800000, 0xff800000, 0x7fc00000,
	0xffc00123, 0x7f800001, 0xffa00000, 0x4b800000, 0x40490fdb, 0x0d800000,
};
#define NS (sizeof s_edges / sizeof s_edges[0])

static const char *q4[] = {"suic", "suim", "sui", "suid"};

static int finite_normal(u64 x)
{
	u64 e = x >> 52 & 0x7ff;
	return e != 0x7ff && (e != 0 || (x & FRAC) == 0);
}

/* cmp_ok: the non-/S compares take zeros, normals and infinities. */
static int cmp_ok(u64 x)
{
	u64 e = x >> 52 & 0x7ff;
	return (x & FRAC) == 0 || (e != 0 && e != 0x7ff);
}

static void binary_t(const char *op, u64 a, u64 b)
{
	char name[32];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "%s/%s", op, q4[i]);
		apply(name, a, b, DISABLED | DYN(i == 3 ? PLUS : NORMAL));
	}
}

/* plain runs the non-/S forms when qemu would not trap on them: finite
   normal operands and no INV, DZE or OVF from the /SUI form. */
static void plain(const char *op, u64 a, u64 b)
{
	char name[32];
	u64 f;
	if (!finite_normal(a) || !finite_normal(b))
		return;
	snprintf(name, sizeof name, "%s/sui", op);
	set_fpcr(DISABLED);
	{
		struct op *o = find(name);
		u64 r;
		o->f(&a, &b, &r);
	}
	f = get_fpcr();
	if (f & (INV | DZE | OVF))
		return;
	apply(op, a, b, DISABLED | DYN(NORMAL));
	snprintf(name, sizeof name, "%s/c", op);
	apply(name, a, b, DISABLED);
	snprintf(name, sizeof name, "%s/m", op);
	apply(name, a, b, DISABLED);
	snprintf(name, sizeof name, "%s/d", op);
	apply(name, a, b, DISABLED | DYN(MINUS));
}

static void unary_q(const char *op, u64 b)
{
	char name[32];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "%s/%s", op, q4[i]);
		apply(name, 0, b, DISABLED | DYN(i == 3 ? PLUS : NORMAL));
	}
}

static void cvttq(u64 b)
{
	static const char *q[] = {"cvttq/svic", "cvttq/svim", "cvttq/svi", "cvttq/svid", "cvttq/svc"};
	for (int i = 0; i < 5; i++)
		apply(q[i], 0, b, DISABLED | DYN(i == 3 ? PLUS : NORMAL));
	if (finite_normal(b))
		apply("cvttq/c", 0, b, DISABLED);
}

static const char *t3[] = {"addt", "subt", "mult", "divt"};
static const char *s3[] = {"adds", "subs", "muls", "divs"};

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fpe;
	sigaction(SIGFPE, &sa, 0);
	decode_ops();

	/* T arithmetic: all pairs of edges, then random pairs. */
	for (unsigned i = 0; i < NT; i++)
		for (unsigned j = 0; j < NT; j++)
			for (int k = 0; k < 4; k++)
				binary_t(t3[k], t_edges[i], t_edges[j]);
	for (int n = 0; n < 600; n++) {
		u64 a = rand_t(), b = rnd() % 3 == 0 ? rand_t_exp((int)(a >> 52 & 0x7ff)) : rand_t();
		for (int k = 0; k < 4; k++)
			binary_t(t3[k], a, b);
	}
	/* Products and quotients near the underflow and overflow thresholds:
	   exponents that sum (or differ) to just outside the normal range. */
	for (int n = 0; n < 300; n++) {
		int ea = 1 + (int)(rnd() % 2046), eb;
		u64 a, b;
		if (n % 2)
			eb = 1023 - (ea - 1023) + (n % 4 == 1 ? -1022 : 1023) + (int)(rnd() % 40) - 20;
		else
			eb = ea + (n % 4 == 0 ? 1022 : -1023) + (int)(rnd() % 40) - 20;
		if (eb < 0)
			eb = 0;
		if (eb > 2046)
			eb = 2046;
		a = rand_t_exp(ea);
		b = rand_t_exp(eb);
		binary_t("mult", a, b);
		binary_t("divt", a, b);
		binary_t("mult", a ^ (1ull << 63), b);
	}

	/* S arithmetic on S data (through LDS), and a few T data. */
	for (unsigned i = 0; i < NS; i++)
		for (unsigned j = 0; j < NS; j++)
			for (int k = 0; k < 4; k++)
				binary_t(s3[k], s_reg(s_edges[i]), s_reg(s_edges[j]));
	for (int n = 0; n < 600; n++) {
		u32 x = rand_s_exp(-1), y = rnd() % 3 == 0 ? rand_s_exp((int)(x >> 23 & 0xff)) : rand_s_exp(-1);
		for (int k = 0; k < 4; k++)
			binary_t(s3[k], s_reg(x), s_reg(y));
	}
	for (int n = 0; n < 100; n++) {
		u64 a = rand_t(), b = rand_t();
		for (int k = 0; k < 4; k++)
			binary_t(s3[k], a, b);
	}

	/* Without /S: normal rounding, /C, /M, /D; no /U, so underflow
	   flushes to zero. */
	for (int n = 0; n < 500; n++) {
		u64 a = rand_t_exp(n % 4 == 0 ? 20 + (int)(rnd() % 20) : 1023), b;
		b = rand_t_exp(n % 4 == 0 ? 1023 - (int)(rnd() % 20) : 1023 + (int)(rnd() % 40) - 20);
		if (n % 8 == 1) {
			a = rand_t_exp(1 + (int)(rnd() % 4));
			b = (a ^ (1ull << 63)) + (rnd() % 5) - 2; /* cancellation to a denormal */
		}
		if (n % 8 == 2) {
			a = rand_t_exp(500 + (int)(rnd() % 20));
			b = rand_t_exp(500 + (int)(rnd() % 20));
		}
		if (n % 8 == 3) {
			a = rand_t_exp(20);
			b = rand_t_exp(1023 + 1000);
		}
		for (int k = 0; k < 4; k++)
			plain(t3[k], a, b);
		{
			u32 x = rand_s_exp(n % 4 == 0 ? 10 : 127), y = rand_s_exp(n % 4 == 0 ? 120 : 127);
			if (n % 4 == 1) {
				x = rand_s_exp(70);
				y = rand_s_exp(70);
			}
			plain("adds", s_reg(x), s_reg(y));
			plain("muls", s_reg(x), s_reg(y));
			plain("divs", s_reg(x), s_reg(y ^ 0x3f800000));
		}
	}
	/* Products just below the least normal that round up to it: tiny
	   before rounding, not after. */
	{
		static const u64 t[][2] = {{0x0010000000000001ull, 0x3feffffffffffffeull},
					   {0x8010000000000001ull, 0x3feffffffffffffeull},
					   {0x0010000000000000ull, 0x3fefffffffffffffull}};
		static const u32 s[][2] = {{0x00800001, 0x3f7ffffe}, {0x80800001, 0x3f7ffffe},
					   {0x00800000, 0x3f7fffff}};
		for (int i = 0; i < 3; i++) {
			plain("mult", t[i][0], t[i][1]);
			plain("muls", s_reg(s[i][0]), s_reg(s[i][1]));
			for (int m = 0; m < 4; m++) {
				apply("mult/suid", t[i][0], t[i][1], DISABLED | UNDZ | DYN(m));
				apply("muls/suid", s_reg(s[i][0]), s_reg(s[i][1]), DISABLED | UNDZ | DYN(m));
				apply("mult/suid", t[i][0], t[i][1], DISABLED | DYN(m));
				apply("muls/suid", s_reg(s[i][0]), s_reg(s[i][1]), DISABLED | DYN(m));
			}
		}
	}

	/* /SU without /I. */
	for (unsigned i = 0; i < NT; i += 3)
		for (unsigned j = 0; j < NT; j += 2) {
			apply("addt/su", t_edges[i], t_edges[j], DISABLED | DYN(NORMAL));
			apply("mult/su", t_edges[i], t_edges[j], DISABLED | DYN(NORMAL));
			apply("adds/su", s_reg(s_edges[i % NS]), s_reg(s_edges[j % NS]), DISABLED);
		}

	/* Dynamic rounding through every FPCR mode. */
	for (int n = 0; n < 200; n++) {
		u64 a = rand_t(), b = rand_t();
		for (int m = 0; m < 4; m++) {
			apply("addt/suid", a, b, DISABLED | DYN(m));
			apply("divs/suid", s_reg(rand_s_exp(-1)), s_reg(rand_s_exp(-1)), DISABLED | DYN(m));
		}
	}

	/* Unary T operations. */
	for (unsigned i = 0; i < NT; i++) {
		unary_q("sqrtt", t_edges[i]);
		unary_q("cvtts", t_edges[i]);
		cvttq(t_edges[i]);
	}
	for (int n = 0; n < 600; n++) {
		u64 b = rand_t();
		unary_q("sqrtt", b);
		unary_q("cvtts", b);
		if (n % 2)
			b = rand_t_exp(1023 + (int)(rnd() % 70));
		cvttq(b);
		if (n % 4 == 0) {
			/* Near the S range's edges. */
			u64 c = rand_t_exp(n % 8 ? 1023 + 127 : 1023 - 126 - (int)(rnd() % 25));
			unary_q("cvtts", c);
		}
	}
	/* Ties for conversion to integer. */
	for (int k = -6; k <= 6; k++) {
		union { double d; u64 u; } v;
		v.d = k + 0.5;
		cvttq(v.u);
		v.d = k * 0.25;
		cvttq(v.u);
	}

	/* Unary S operations. */
	for (unsigned i = 0; i < NS; i++) {
		unary_q("sqrts", s_reg(s_edges[i]));
		apply("cvtst/s", 0, s_reg(s_edges[i]), DISABLED);
		if (finite_normal(s_reg(s_edges[i])))
			apply("cvtst", 0, s_reg(s_edges[i]), DISABLED);
	}
	for (int n = 0; n < 400; n++) {
		u64 b = s_reg(rand_s_exp(-1));
		unary_q("sqrts", b);
		apply("cvtst/s", 0, b, DISABLED);
	}

	/* Integer to FP. */
	{
		static const u64 q_edges[] = {
			0, 1, ~0ull, 2, 3, 0x7fffffffffffffffull, 0x8000000000000000ull,
			0x8000000000000001ull, 0x0020000000000001ull, 0x0020000000000003ull,
			0x0010000000000001ull, 0xffdfffffffffffffull, 0x1000001ull, 0x1000003ull,
			0x7fffff8000000000ull, 0x7fffffc000000000ull, 0x00000000ffffffffull,
			0xffffffff80000000ull, 0x7fffffffull, 0x80000000ull, 0xfffffffeffffffffull,
		};
		for (unsigned i = 0; i < sizeof q_edges / sizeof q_edges[0]; i++) {
			unary_q("cvtqt", q_edges[i]);
			unary_q("cvtqs", q_edges[i]);
			apply("cvtqt/c", 0, q_edges[i], DISABLED);
			apply("cvtqs/m", 0, q_edges[i], DISABLED);
			apply("cvtql", 0, q_edges[i], DISABLED);
			apply("cvtql/sv", 0, q_edges[i], DISABLED);
			apply("cvtql/v", 0, q_edges[i], DISABLED);
		}
		for (int n = 0; n < 400; n++) {
			u64 b = rnd() >> (rnd() % 64);
			if (rnd() & 1)
				b = -b;
			unary_q("cvtqt", b);
			unary_q("cvtqs", b);
			apply("cvtql", 0, b, DISABLED);
			apply("cvtlq", 0, rnd(), DISABLED);
		}
	}

	/* Compares, sign copies, FCMOV. */
	for (unsigned i = 0; i < NT; i++)
		for (unsigned j = 0; j < NT; j++) {
			u64 a = t_edges[i], b = t_edges[j];
			apply("cmptun/su", a, b, DISABLED);
			apply("cmpteq/su", a, b, DISABLED);
			apply("cmptlt/su", a, b, DISABLED);
			apply("cmptle/su", a, b, DISABLED);
			if (cmp_ok(a) && cmp_ok(b)) {
				apply("cmpteq", a, b, DISABLED);
				apply("cmptle", a, b, DISABLED);
			}
			if (j % 4 == 0) {
				apply("cpys", a, b, DISABLED);
				apply("cpysn", a, b, DISABLED);
				apply("cpyse", a, b, DISABLED);
			}
		}
	for (unsigned i = 0; i < NT; i++) {
		static const char *c[] = {"fcmoveq", "fcmovne", "fcmovlt", "fcmovge", "fcmovle", "fcmovgt"};
		for (int k = 0; k < 6; k++)
			apply(c[k], t_edges[i], 0x3ff0000000000000ull, DISABLED);
	}

	/* DNZ: denormal operands read as zero. */
	{
		static const u64 d[] = {
			0x0000000000000001ull, 0x800fffffffffffffull, 0x0008000000000000ull,
			0x0000000020000000ull, 0x8000000000000000ull, 0x0010000000000000ull,
			0x3ff0000000000000ull, 0xbff0000000000000ull, 0x7ff0000000000000ull,
			0x7ff8000000000000ull, 0x000fffffe0000000ull,
		};
		unsigned nd = sizeof d / sizeof d[0];
		for (unsigned i = 0; i < nd; i++) {
			for (unsigned j = 0; j < nd; j++) {
				apply("addt/sui", d[i], d[j], DISABLED | DNZ | DYN(NORMAL));
				apply("mult/suim", d[i], d[j], DISABLED | DNZ);
				apply("divt/sui", d[i], d[j], DISABLED | DNZ);
				apply("cmptlt/su", d[i], d[j], DISABLED | DNZ);
				apply("cmpteq/su", d[i], d[j], DISABLED | DNZ);
				apply("adds/suic", d[i], d[j], DISABLED | DNZ);
				apply("divs/sui", d[i], d[j], DISABLED | DNZ);
			}
			apply("cvttq/svim", 0, d[i], DISABLED | DNZ);
			apply("sqrtt/sui", 0, d[i], DISABLED | DNZ);
			apply("sqrts/sui", 0, d[i], DISABLED | DNZ);
			apply("cvtts/sui", 0, d[i], DISABLED | DNZ);
			apply("cvtst/s", 0, d[i], DISABLED | DNZ);
		}
	}

	/* UNDZ: underflowing results become zeros. */
	for (int n = 0; n < 300; n++) {
		u64 a = rand_t_exp(1 + (int)(rnd() % 30)), b = rand_t_exp(1023 - (int)(rnd() % 3));
		u64 f = DISABLED | UNDZ | DYN(n % 4);
		apply("mult/suid", a, b, f);
		apply("divt/suid", a, b ^ 0x0010000000000000ull, f);
		apply("subt/suid", a, (a & ~FRAC) | (rnd() & FRAC), f);
		apply("cvtts/suid", 0, rand_t_exp(1023 - 126 - (int)(rnd() % 30)), f);
		apply("muls/suid", s_reg(rand_s_exp(1 + (int)(rnd() % 10))), s_reg(rand_s_exp(127 - (int)(rnd() % 3))), f);
	}

	/* Memory formats. */
	{
		static const u64 m[] = {0, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000, 0x7fc00000,
					0x00000001, 0x807fffff, 0x00800000, 0x40000000, 0x3fffffff,
					0x00004000, 0x00008000, 0x0000c080, 0x00003f80, 0xffffffff,
					0x00010000, 0x40c90fdb};
		for (unsigned i = 0; i < sizeof m / sizeof m[0]; i++) {
			apply("lds", m[i], 0, DISABLED);
			apply("ldf", m[i], 0, DISABLED);
			apply("itofs", m[i] | 0xdead000000000000ull, 0, DISABLED);
		}
		for (unsigned i = 0; i < NT; i++) {
			apply("sts", t_edges[i], 0, DISABLED);
			apply("ftois", t_edges[i], 0, DISABLED);
			apply("ldg", t_edges[i], 0, DISABLED);
			apply("stg", t_edges[i], 0, DISABLED);
		}
		for (int n = 0; n < 300; n++) {
			apply("lds", rnd() & 0xffffffff, 0, DISABLED);
			apply("ldf", rnd() & 0xffffffff, 0, DISABLED);
			apply("sts", rnd(), 0, DISABLED);
			apply("ftois", rnd(), 0, DISABLED);
			apply("itofs", rnd(), 0, DISABLED);
			apply("ldg", rnd(), 0, DISABLED);
			apply("stg", rnd(), 0, DISABLED);
		}
	}

	/* Integer operates. */
	{
		static const u64 a_vals[] = {0x0123456789abcdefull, 0xfedcba9876543210ull, ~0ull, 0,
					     0x8000000000000001ull, 0x00000000ffffffffull,
					     0x7f80ff017f80ff01ull};
		static const u64 b_vals[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0xf9, ~0ull, 0x8000000000000003ull};
		static const char *byteops[] = {"extbl", "extwl", "extll", "extql", "extwh", "extlh", "extqh",
						"insbl", "inswl", "insll", "insql", "inswh", "inslh", "insqh",
						"mskbl", "mskwl", "mskll", "mskql", "mskwh", "msklh", "mskqh"};
		static const char *two[] = {"cmpbge", "umulh", "minub8", "minsb8", "minuw4", "minsw4",
					    "maxub8", "maxsb8", "maxuw4", "maxsw4", "perr"};
		static const char *one[] = {"pklb", "pkwb", "unpkbl", "unpkbw", "ctpop", "ctlz", "cttz",
					    "sextb", "sextw"};
		static const u64 edges[] = {0, 1, ~0ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
					    0x7f7f7f7f7f7f7f7full, 0x8080808080808080ull, 0x7fff8000ffff0001ull,
					    0x00000000ffffffffull, 0xffffffff00000000ull, 0x0000000080000000ull,
					    0x000000007fffffffull};
		unsigned ne = sizeof edges / sizeof edges[0];
		for (unsigned k = 0; k < sizeof byteops / sizeof byteops[0]; k++) {
			for (unsigned i = 0; i < sizeof a_vals / sizeof a_vals[0]; i++)
				for (unsigned j = 0; j < sizeof b_vals / sizeof b_vals[0]; j++)
					apply(byteops[k], a_vals[i], b_vals[j], 0);
			for (int n = 0; n < 40; n++)
				apply(byteops[k], rnd(), rnd(), 0);
		}
		for (unsigned b = 0; b < 256; b += 5) {
			apply("zap", 0x0123456789abcdefull, b | 0xabcd00, 0);
			apply("zapnot", 0x0123456789abcdefull, b | 0xabcd00, 0);
		}
		for (unsigned k = 0; k < sizeof two / sizeof two[0]; k++) {
			for (unsigned i = 0; i < ne; i++)
				for (unsigned j = 0; j < ne; j++)
					apply(two[k], edges[i], edges[j], 0);
			for (int n = 0; n < 150; n++) {
				u64 a = rnd(), b = rnd();
				if (n % 3 == 0)
					b = a ^ (rnd() & 0x0101010101010101ull);
				apply(two[k], a, b, 0);
			}
		}
		for (unsigned k = 0; k < sizeof one / sizeof one[0]; k++) {
			for (unsigned i = 0; i < ne; i++)
				apply(one[k], 0, edges[i], 0);
			for (int n = 0; n < 60; n++)
				apply(one[k], 0, rnd() >> (rnd() % 64), 0);
		}
		{
			static const char *p[][2] = {{"addl", "addl/v"}, {"subl", "subl/v"}, {"mull", "mull/v"},
						     {"addq", "addq/v"}, {"subq", "subq/v"}, {"mulq", "mulq/v"}};
			static const u64 v[] = {0, 1, ~0ull, 2, 0x7fffffff, 0x80000000, 0xffffffff80000000ull,
						0x12345678ffffffffull, 0x7fffffffffffffffull,
						0x8000000000000000ull, 0x100000000ull, 0xb504f334ull,
						0x00000000b504f333ull, 0x5a827999ull};
			unsigned nv = sizeof v / sizeof v[0];
			for (int k = 0; k < 6; k++) {
				for (unsigned i = 0; i < nv; i++)
					for (unsigned j = 0; j < nv; j++)
						apply_v(p[k][0], p[k][1], v[i], v[j]);
				for (int n = 0; n < 100; n++) {
					u64 a = rnd() >> (rnd() % 64), b = rnd() >> (rnd() % 64);
					if (rnd() & 1)
						a = -a;
					apply_v(p[k][0], p[k][1], a, b);
				}
			}
		}
	}
	return 0;
}
