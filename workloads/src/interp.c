/*
 * interp - a bytecode interpreter with a big instruction set, run twice over
 * the same program: once dispatching through a switch (compiled to a jump
 * table: ldl + addq gp + jmp) and once with computed goto (a jmp per
 * handler, threaded). Like the interpreters of the DCPI paper's era (Perl,
 * Tcl, a JVM), the dispatch loop and its handlers are far larger than the
 * 21164's 8 KB direct-mapped I-cache: 105 opcodes with
 * distinct, substantial bodies (string, arithmetic, bit manipulation, stack
 * and table operations), the heavier ones in WL_NOINLINE helpers (vm_b64,
 * vm_sort8, vm_isqrt, ...) shared by both dispatchers. The bytecode program
 * uses nearly every opcode in each iteration of its outer loop, so the
 * handlers keep evicting each other from the I-cache; a short RC4-style
 * inner loop is the one hot spot that fits.
 *
 * Indirect jumps the 21164 mispredicts, I-cache misses, byte accesses
 * without BWX (string ops), and integer division (DIVU, MODU) through
 * glibc's __divqu/__remqu.
 *
 * usage: interp [scale]   (default 1; work grows linearly)
 */
#include "wl.h"

/* ---- instruction set ---- */

/* Plain operations fall through to the next instruction. */
#define PLAIN_OPS(X)                                                        \
	/* arithmetic */                                                    \
	X(LDI) X(LDHI) X(MOV) X(ADD) X(ADDI) X(SUB) X(MUL) X(MULHI)         \
	X(DIVU) X(MODU) X(MIN) X(MAX) X(ABSD) X(MULADD) X(ISQRT) X(GCD)     \
	X(NEG) X(SEXT) X(CMPLT) X(SEL) X(AVGU) X(POLY)                      \
	/* bits */                                                          \
	X(AND) X(OR) X(XOR) X(ANDI) X(ORI) X(XORI) X(SHLI) X(SHRI) X(SARI)  \
	X(ROTL) X(ROTR) X(POPC) X(CLZ) X(CTZ) X(BSWAP) X(BREV) X(GRAY)      \
	X(UNGRAY) X(PARITY) X(BFX) X(BFI) X(MIX) X(HASH2) X(CRC32)          \
	X(MORTON) X(UNMORTON) X(SATADD8)                                    \
	/* stack */                                                         \
	X(PUSH) X(POP) X(PUSHI) X(DUP) X(SWAP) X(OVER) X(ROT3) X(SADD)      \
	X(SMUL) X(SXOR) X(SDOT4) X(SREV4) X(SSUM)                           \
	/* byte memory and strings */                                       \
	X(LDB) X(STB) X(LDW) X(STW) X(LDQ) X(STQ) X(FILL) X(COPY) X(SHASH)  \
	X(SREV) X(UPPER) X(SCMP) X(ITOA) X(ATOI) X(BCOUNT) X(ROT13)          \
	X(XORSTR) X(B64) X(HEXD) X(CHK16)                                   \
	/* table */                                                         \
	X(TLD) X(TST) X(TADD) X(TSWAP) X(TSORT8) X(TSUM8) X(TMAX8) X(THASH) \
	X(TSHUF) X(TINIT)

/* Control operations compute the next pc. */
#define JUMP_OPS(X)                                                         \
	X(JMP) X(JLT) X(JGE) X(JEQ) X(JNE) X(JZ) X(JNZ) X(LOOP) X(CALL)     \
	X(RET) X(JTAB) X(JBIT)

#define ENUM_OP(name) OP_##name,
enum op { OP_HALT, PLAIN_OPS(ENUM_OP) JUMP_OPS(ENUM_OP) OP_COUNT };

struct insn {
	uint8_t op, a, b, c;
	int32_t imm;
};

/* The machine. Every index is masked, so no bytecode can reach outside it;
 * registers are uint64_t so every operation is defined. */
#define NREGS 16
#define STK 32
#define CSTK 16
#define MEMSZ 1024
#define TABSZ 256

struct vm {
	uint64_t r[NREGS];
	uint64_t s[STK];
	uint32_t sp, csp;
	uint32_t cs[CSTK];
	uint32_t tab[TABSZ];
	uint8_t m[MEMSZ];
	uint64_t hist[256];
};

#define RA v->r[i->a & (NREGS - 1)]
#define RB v->r[i->b & (NREGS - 1)]
#define RC v->r[i->c & (NREGS - 1)]
#define IMM ((uint64_t)(int64_t)i->imm)
#define MB(x) v->m[(x) & (MEMSZ - 1)]
#define TB(x) v->tab[(x) & (TABSZ - 1)]
#define ST(k) v->s[(v->sp - (k)) & (STK - 1)] /* ST(1) is the top */

static uint32_t crc_tab[256];
static const uint8_t b64_chars[64] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const uint8_t hex_chars[16] = "0123456789abcdef";

static void init_crc(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[n] = c;
	}
}

/* ---- bit helpers (inlined into the handlers) ---- */

#define INLINE static inline __attribute__((always_inline))

INLINE uint64_t rotl64(uint64_t x, unsigned r)
{
	r &= 63;
	return r ? (x << r) | (x >> (64 - r)) : x;
}

INLINE uint64_t clz64(uint64_t x)
{
	uint64_t n = 0;
	if (x == 0)
		return 64;
	if (!(x >> 32)) { n += 32; x <<= 32; }
	if (!(x >> 48)) { n += 16; x <<= 16; }
	if (!(x >> 56)) { n += 8; x <<= 8; }
	if (!(x >> 60)) { n += 4; x <<= 4; }
	if (!(x >> 62)) { n += 2; x <<= 2; }
	if (!(x >> 63)) n += 1;
	return n;
}

INLINE uint64_t ctz64(uint64_t x)
{
	uint64_t n = 0;
	if (x == 0)
		return 64;
	if (!(x & 0xffffffffu)) { n += 32; x >>= 32; }
	if (!(x & 0xffff)) { n += 16; x >>= 16; }
	if (!(x & 0xff)) { n += 8; x >>= 8; }
	if (!(x & 0xf)) { n += 4; x >>= 4; }
	if (!(x & 0x3)) { n += 2; x >>= 2; }
	if (!(x & 0x1)) n += 1;
	return n;
}

INLINE uint64_t popc64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

INLINE uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* spread32 moves bit k of the low 32 bits to bit 2k. */
INLINE uint64_t spread32(uint64_t x)
{
	x &= 0xffffffffULL;
	x = (x | (x << 16)) & 0x0000ffff0000ffffULL;
	x = (x | (x << 8)) & 0x00ff00ff00ff00ffULL;
	x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0fULL;
	x = (x | (x << 2)) & 0x3333333333333333ULL;
	x = (x | (x << 1)) & 0x5555555555555555ULL;
	return x;
}

/* squeeze32 is the inverse: the even bits, packed. */
INLINE uint64_t squeeze32(uint64_t x)
{
	x &= 0x5555555555555555ULL;
	x = (x | (x >> 1)) & 0x3333333333333333ULL;
	x = (x | (x >> 2)) & 0x0f0f0f0f0f0f0f0fULL;
	x = (x | (x >> 4)) & 0x00ff00ff00ff00ffULL;
	x = (x | (x >> 8)) & 0x0000ffff0000ffffULL;
	x = (x | (x >> 16)) & 0x00000000ffffffffULL;
	return x;
}

/* ---- heavier operations: out of line, shared by both dispatchers ---- */

WL_NOINLINE
static uint64_t vm_mulhi(uint64_t a, uint64_t b)
{
	uint64_t al = a & 0xffffffffULL, ah = a >> 32;
	uint64_t bl = b & 0xffffffffULL, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (lh & 0xffffffffULL) + (hl & 0xffffffffULL);
	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

WL_NOINLINE
static uint64_t vm_isqrt(uint64_t x)
{
	uint64_t res = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= res + bit) {
			x -= res + bit;
			res = (res >> 1) + bit;
		} else {
			res >>= 1;
		}
		bit >>= 2;
	}
	return res;
}

WL_NOINLINE
static uint64_t vm_gcd(uint64_t a, uint64_t b)
{
	uint64_t shift;

	if (a == 0)
		return b;
	if (b == 0)
		return a;
	shift = ctz64(a | b);
	a >>= ctz64(a);
	do {
		b >>= ctz64(b);
		if (a > b) {
			uint64_t t = a;
			a = b;
			b = t;
		}
		b -= a;
	} while (b);
	return a << shift;
}

WL_NOINLINE
static uint64_t vm_brev(uint64_t x)
{
	x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
	x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
	x = ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((x & 0x0f0f0f0f0f0f0f0fULL) << 4);
	x = ((x >> 8) & 0x00ff00ff00ff00ffULL) | ((x & 0x00ff00ff00ff00ffULL) << 8);
	x = ((x >> 16) & 0x0000ffff0000ffffULL) | ((x & 0x0000ffff0000ffffULL) << 16);
	return (x >> 32) | (x << 32);
}

WL_NOINLINE
static uint64_t vm_crc32(uint64_t crc, uint64_t x)
{
	uint32_t c = (uint32_t)crc ^ 0xffffffffu;
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		c = crc_tab[(c ^ (uint32_t)(x >> (8 * k))) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

WL_NOINLINE
static uint64_t vm_poly(uint64_t x)
{
	/* Horner, mod 2^64, odd coefficients */
	uint64_t y = 0x9e3779b97f4a7c15ULL;
	y = y * x + 0xc2b2ae3d27d4eb4fULL;
	y = y * x + 0x165667b19e3779f9ULL;
	y = y * x + 0xd6e8feb86659fd93ULL;
	y = y * x + 0xff51afd7ed558ccdULL;
	y = y * x + 0xc4ceb9fe1a85ec53ULL;
	y = y * x + 0x2545f4914f6cdd1dULL;
	y = y * x + 0x5851f42d4c957f2dULL;
	return y;
}

WL_NOINLINE
static uint64_t vm_itoa(struct vm *v, uint64_t dst, uint64_t x)
{
	uint8_t tmp[20];
	unsigned n = 0;

	do {
		tmp[n++] = (uint8_t)('0' + x % 10);
		x /= 10;
	} while (x);
	for (unsigned k = 0; k < n; k++)
		MB(dst + k) = tmp[n - 1 - k];
	MB(dst + n) = 0;
	return n;
}

WL_NOINLINE
static uint64_t vm_atoi(const struct vm *v, uint64_t src)
{
	uint64_t x = 0;

	for (unsigned k = 0; k < 20; k++) {
		uint8_t c = MB(src + k);
		if (c < '0' || c > '9')
			break;
		x = x * 10 + (uint64_t)(c - '0');
	}
	return x;
}

WL_NOINLINE
static void vm_b64(struct vm *v, uint64_t dst, uint64_t src)
{
#pragma GCC unroll 4
	for (unsigned g = 0; g < 4; g++) {
		uint32_t w = (uint32_t)MB(src + 3 * g) << 16 |
			     (uint32_t)MB(src + 3 * g + 1) << 8 |
			     (uint32_t)MB(src + 3 * g + 2);
		MB(dst + 4 * g) = b64_chars[(w >> 18) & 63];
		MB(dst + 4 * g + 1) = b64_chars[(w >> 12) & 63];
		MB(dst + 4 * g + 2) = b64_chars[(w >> 6) & 63];
		MB(dst + 4 * g + 3) = b64_chars[w & 63];
	}
}

WL_NOINLINE
static void vm_hexd(struct vm *v, uint64_t dst, uint64_t x)
{
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		MB(dst + k) = hex_chars[(x >> (60 - 4 * k)) & 15];
}

WL_NOINLINE
static void vm_rot13(struct vm *v, uint64_t a)
{
#pragma GCC unroll 8
	for (unsigned k = 0; k < 16; k++) {
		uint8_t c = MB(a + k);
		if (c >= 'a' && c <= 'z')
			c = (uint8_t)('a' + (c - 'a' + 13) % 26);
		else if (c >= 'A' && c <= 'Z')
			c = (uint8_t)('A' + (c - 'A' + 13) % 26);
		MB(a + k) = c;
	}
}

WL_NOINLINE
static uint64_t vm_scmp(const struct vm *v, uint64_t a, uint64_t b)
{
#pragma GCC unroll 4
	for (unsigned k = 0; k < 16; k++) {
		uint8_t x = MB(a + k), y = MB(b + k);
		if (x != y)
			return x < y ? 1 : 2;
	}
	return 0;
}

WL_NOINLINE
static void vm_sort8(struct vm *v, uint64_t base)
{
	uint32_t t[8];
#define CX(p, q)                                                            \
	do {                                                                \
		uint32_t lo = t[p] < t[q] ? t[p] : t[q];                    \
		uint32_t hi = t[p] < t[q] ? t[q] : t[p];                    \
		t[p] = lo;                                                  \
		t[q] = hi;                                                  \
	} while (0)

#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++)
		t[k] = TB(base + k);
	/* Batcher's odd-even merge sort for 8: 19 comparators */
	CX(0, 1); CX(2, 3); CX(4, 5); CX(6, 7);
	CX(0, 2); CX(1, 3); CX(4, 6); CX(5, 7);
	CX(1, 2); CX(5, 6);
	CX(0, 4); CX(1, 5); CX(2, 6); CX(3, 7);
	CX(2, 4); CX(3, 5);
	CX(1, 2); CX(3, 4); CX(5, 6);
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++)
		TB(base + k) = t[k];
#undef CX
}

WL_NOINLINE
static uint64_t vm_thash(const struct vm *v, uint64_t x)
{
	uint64_t h = 0;
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++) {
		uint32_t e = TB(((x >> (8 * k)) + 37 * k) & 0xff);
		h ^= rotl64((uint64_t)e * 0x9e3779b1u, 8 * k + 3);
	}
	return h;
}

WL_NOINLINE
static uint64_t vm_tshuf(struct vm *v, uint64_t base, uint64_t seed)
{
#pragma GCC unroll 7
	for (unsigned k = 7; k > 0; k--) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t j = ((seed >> 33) * (k + 1)) >> 31;
		uint32_t t = TB(base + k);
		TB(base + k) = TB(base + j);
		TB(base + j) = t;
	}
	return seed;
}

/* ---- handlers ---- */

#define OPFN(name) INLINE void op_##name(struct vm *v, const struct insn *i)
#define JFN(name)                                                           \
	INLINE uint32_t op_##name(struct vm *v, const struct insn *i,       \
				  uint32_t pc)

/* arithmetic */
OPFN(LDI) { RA = IMM; }
OPFN(LDHI) { RA = (RA << 32) | (uint32_t)i->imm; }
OPFN(MOV) { RA = RB; }
OPFN(ADD) { RA = RB + RC; }
OPFN(ADDI) { RA = RB + IMM; }
OPFN(SUB) { RA = RB - RC; }
OPFN(MUL) { RA = RB * RC; }
OPFN(MULHI) { RA = vm_mulhi(RB, RC); }
OPFN(DIVU) { RA = RC ? RB / RC : ~(uint64_t)0; }
OPFN(MODU) { RA = RC ? RB % RC : RB; }
OPFN(MIN) { RA = RB < RC ? RB : RC; }
OPFN(MAX) { RA = RB > RC ? RB : RC; }
OPFN(ABSD) { RA = RB > RC ? RB - RC : RC - RB; }
OPFN(MULADD) { RA += RB * RC; }
OPFN(ISQRT) { RA = vm_isqrt(RB); }
OPFN(GCD) { RA = vm_gcd(RB, RC); }
OPFN(NEG) { RA = -RB; }
OPFN(SEXT)
{
	unsigned w = (unsigned)(i->imm & 63) + 1; /* field width 1..64 */
	uint64_t x = RB;
	if (w < 64) {
		uint64_t sign = 1ULL << (w - 1);
		x = ((x & ((sign << 1) - 1)) ^ sign) - sign;
	}
	RA = x;
}
OPFN(CMPLT) { RA = RB < RC; }
OPFN(SEL) { RA = RA ? RB : RC; }
OPFN(AVGU) { RA = (RB & RC) + ((RB ^ RC) >> 1); }
OPFN(POLY) { RA = vm_poly(RB + IMM); }

/* bits */
OPFN(AND) { RA = RB & RC; }
OPFN(OR) { RA = RB | RC; }
OPFN(XOR) { RA = RB ^ RC; }
OPFN(ANDI) { RA = RB & IMM; }
OPFN(ORI) { RA = RB | IMM; }
OPFN(XORI) { RA = RB ^ IMM; }
OPFN(SHLI) { RA = RB << (i->imm & 63); }
OPFN(SHRI) { RA = RB >> (i->imm & 63); }
OPFN(SARI)
{
	unsigned s = (unsigned)i->imm & 63;
	uint64_t x = RB;
	RA = (x >> s) | ((x >> 63) && s ? ~(~(uint64_t)0 >> s) : 0);
}
OPFN(ROTL) { RA = rotl64(RB, (unsigned)RC); }
OPFN(ROTR) { RA = rotl64(RB, 64 - ((unsigned)i->imm & 63)); }
OPFN(POPC) { RA = popc64(RB); }
OPFN(CLZ) { RA = clz64(RB); }
OPFN(CTZ) { RA = ctz64(RB); }
OPFN(BSWAP)
{
	uint64_t x = RB;
	x = ((x >> 8) & 0x00ff00ff00ff00ffULL) | ((x & 0x00ff00ff00ff00ffULL) << 8);
	x = ((x >> 16) & 0x0000ffff0000ffffULL) | ((x & 0x0000ffff0000ffffULL) << 16);
	RA = (x >> 32) | (x << 32);
}
OPFN(BREV) { RA = vm_brev(RB); }
OPFN(GRAY) { RA = RB ^ (RB >> 1); }
OPFN(UNGRAY)
{
	uint64_t x = RB;
	x ^= x >> 1;
	x ^= x >> 2;
	x ^= x >> 4;
	x ^= x >> 8;
	x ^= x >> 16;
	x ^= x >> 32;
	RA = x;
}
OPFN(PARITY)
{
	uint64_t x = RB;
	x ^= x >> 32;
	x ^= x >> 16;
	x ^= x >> 8;
	RA = (0x6996u >> ((x ^ (x >> 4)) & 0xf)) & 1;
}
OPFN(BFX)
{
	unsigned pos = (unsigned)i->c & 63, w = (unsigned)i->imm & 63;
	RA = (RB >> pos) & ((1ULL << w) - 1);
}
OPFN(BFI)
{
	unsigned pos = (unsigned)i->c & 63, w = (unsigned)i->imm & 63;
	uint64_t mask = ((1ULL << w) - 1) << pos;
	RA = (RA & ~mask) | ((RB << pos) & mask);
}
OPFN(MIX) { RA = mix64(RB + IMM * 0x9e3779b97f4a7c15ULL); }
OPFN(HASH2)
{
	uint64_t h = RA, k = RB * 0x87c37b91114253d5ULL;
	k = rotl64(k, 31) * 0x4cf5ad432745937fULL;
	h ^= k;
	h = rotl64(h, 27) * 5 + 0x52dce729;
	RA = h;
}
OPFN(CRC32) { RA = vm_crc32(RA, RB); }
OPFN(MORTON) { RA = spread32(RB) | (spread32(RC) << 1); }
OPFN(UNMORTON)
{
	uint64_t x = RB;
	RA = squeeze32(x);
	RC = squeeze32(x >> 1);
}
OPFN(SATADD8)
{
	const uint64_t H = 0x8080808080808080ULL;
	uint64_t x = RB, y = RC;
	uint64_t s = ((x & ~H) + (y & ~H)) ^ ((x ^ y) & H);
	uint64_t carry = ((x & y) | ((x | y) & ~s)) & H;
	RA = s | ((carry >> 7) * 0xff);
}

/* stack */
OPFN(PUSH) { v->s[v->sp++ & (STK - 1)] = RA; }
OPFN(POP) { RA = v->s[--v->sp & (STK - 1)]; }
OPFN(PUSHI) { v->s[v->sp++ & (STK - 1)] = IMM; }
OPFN(DUP)
{
	uint64_t t = ST(1);
	v->s[v->sp++ & (STK - 1)] = t;
}
OPFN(SWAP)
{
	uint64_t t = ST(1);
	ST(1) = ST(2);
	ST(2) = t;
}
OPFN(OVER)
{
	uint64_t t = ST(2);
	v->s[v->sp++ & (STK - 1)] = t;
}
OPFN(ROT3)
{
	uint64_t a = ST(3), b = ST(2), c = ST(1);
	ST(3) = b;
	ST(2) = c;
	ST(1) = a;
}
OPFN(SADD)
{
	uint64_t t = ST(1) + ST(2);
	v->sp--;
	ST(1) = t;
}
OPFN(SMUL)
{
	uint64_t t = ST(1) * ST(2);
	v->sp--;
	ST(1) = t;
}
OPFN(SXOR)
{
	uint64_t t = rotl64(ST(1), 7) ^ ST(2);
	v->sp--;
	ST(1) = t;
}
OPFN(SDOT4)
{
	uint64_t t = ST(1) * ST(5) + ST(2) * ST(6) + ST(3) * ST(7) +
		     ST(4) * ST(8);
	v->sp -= 7;
	ST(1) = t;
}
OPFN(SREV4)
{
	uint64_t a = ST(1), b = ST(2), c = ST(3), d = ST(4);
	ST(1) = d;
	ST(2) = c;
	ST(3) = b;
	ST(4) = a;
}
OPFN(SSUM)
{
	uint64_t t = 0;
	unsigned n = (unsigned)i->imm & 7;
	for (unsigned k = 1; k <= n; k++)
		t += ST(k) ^ (k * 0x10001);
	RA = t;
}

/* byte memory and strings */
OPFN(LDB) { RA = MB(RB + IMM); }
OPFN(STB) { MB(RB + IMM) = (uint8_t)RA; }
OPFN(LDW)
{
	uint64_t p = RB + IMM;
	RA = (uint32_t)MB(p) | (uint32_t)MB(p + 1) << 8 |
	     (uint32_t)MB(p + 2) << 16 | (uint32_t)MB(p + 3) << 24;
}
OPFN(STW)
{
	uint64_t p = RB + IMM, x = RA;
	MB(p) = (uint8_t)x;
	MB(p + 1) = (uint8_t)(x >> 8);
	MB(p + 2) = (uint8_t)(x >> 16);
	MB(p + 3) = (uint8_t)(x >> 24);
}
OPFN(LDQ)
{
	uint64_t p = RB + IMM, x = 0;
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++)
		x |= (uint64_t)MB(p + k) << (8 * k);
	RA = x;
}
OPFN(STQ)
{
	uint64_t p = RB + IMM, x = RA;
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++)
		MB(p + k) = (uint8_t)(x >> (8 * k));
}
OPFN(FILL)
{
	uint64_t p = RA, x = RB, step = IMM;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++) {
		MB(p + k) = (uint8_t)(' ' + (x & 63));
		x = (x >> 3) + step * k;
	}
}
OPFN(COPY)
{
	uint8_t t[16];
	uint64_t d = RA, s = RB;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		t[k] = MB(s + k);
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		MB(d + k) = t[k];
}
OPFN(SHASH)
{
	uint64_t p = RB, h = 0xcbf29ce484222325ULL;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++) {
		h ^= MB(p + k);
		h *= 0x100000001b3ULL;
	}
	RA = h;
}
OPFN(SREV)
{
	uint64_t p = RA;
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++) {
		uint8_t t = MB(p + k);
		MB(p + k) = MB(p + 15 - k);
		MB(p + 15 - k) = t;
	}
}
OPFN(UPPER)
{
	uint64_t p = RA;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++) {
		uint8_t c = MB(p + k);
		if ((uint8_t)(c - 'a') < 26)
			MB(p + k) = (uint8_t)(c - 32);
	}
}
OPFN(SCMP) { RA = vm_scmp(v, RB, RC); }
OPFN(ITOA) { RA = vm_itoa(v, RC, RB); }
OPFN(ATOI) { RA = vm_atoi(v, RB); }
OPFN(BCOUNT)
{
	uint64_t p = RB, n = 0;
	uint8_t ch = (uint8_t)RC;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		n += MB(p + k) == ch;
	RA = n;
}
OPFN(ROT13) { vm_rot13(v, RA); }
OPFN(XORSTR)
{
	uint64_t p = RA, key = RB;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		MB(p + k) ^= (uint8_t)(key >> (8 * (k & 7)));
}
OPFN(B64) { vm_b64(v, RA, RB); }
OPFN(HEXD) { vm_hexd(v, RA, RB); }
OPFN(CHK16)
{
	uint64_t p = RB;
	uint32_t s1 = 0, s2 = 0;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++) {
		s1 = (s1 + MB(p + k)) % 255;
		s2 = (s2 + s1) % 255;
	}
	RA = s2 << 8 | s1;
}

/* table */
OPFN(TLD) { RA = TB(RB + IMM); }
OPFN(TST) { TB(RB + IMM) = (uint32_t)RA; }
OPFN(TADD) { TB(RB + IMM) += (uint32_t)RA; }
OPFN(TSWAP)
{
	/* one RC4 step: RA = i, RB = j, RC gets the output byte shifted in */
	uint64_t ii = (RA + 1) & (TABSZ - 1);
	uint32_t ti = v->tab[ii];
	uint64_t jj = (RB + ti) & (TABSZ - 1);
	uint32_t tj = v->tab[jj];
	v->tab[ii] = tj;
	v->tab[jj] = ti;
	RA = ii;
	RB = jj;
	RC = (RC << 8) | (TB(ti + tj) & 0xff);
}
OPFN(TSORT8) { vm_sort8(v, RB); }
OPFN(TSUM8)
{
	uint64_t p = RB, t = 0;
#pragma GCC unroll 8
	for (unsigned k = 0; k < 8; k++)
		t += TB(p + k);
	RA = t;
}
OPFN(TMAX8)
{
	uint64_t p = RB, best = 0;
	uint32_t m = TB(p);
#pragma GCC unroll 7
	for (unsigned k = 1; k < 8; k++) {
		uint32_t e = TB(p + k);
		if (e > m) {
			m = e;
			best = k;
		}
	}
	RA = best;
}
OPFN(THASH) { RA = vm_thash(v, RB); }
OPFN(TSHUF) { RA = vm_tshuf(v, RB, RA); }
OPFN(TINIT)
{
	uint64_t p = RB, seed = RA + IMM;
#pragma GCC unroll 16
	for (unsigned k = 0; k < 16; k++)
		TB(p + k) = (uint32_t)(mix64(seed + k) >> 16);
}

/* control */
JFN(JMP) { return (uint32_t)i->imm; }
JFN(JLT) { return RA < RB ? (uint32_t)i->imm : pc; }
JFN(JGE) { return RA >= RB ? (uint32_t)i->imm : pc; }
JFN(JEQ) { return RA == RB ? (uint32_t)i->imm : pc; }
JFN(JNE) { return RA != RB ? (uint32_t)i->imm : pc; }
JFN(JZ) { return RA == 0 ? (uint32_t)i->imm : pc; }
JFN(JNZ) { return RA != 0 ? (uint32_t)i->imm : pc; }
JFN(LOOP) { return --RA != 0 ? (uint32_t)i->imm : pc; }
JFN(CALL)
{
	v->cs[v->csp++ & (CSTK - 1)] = pc;
	return (uint32_t)i->imm;
}
JFN(RET) { return v->cs[--v->csp & (CSTK - 1)]; }
/* JTAB: pc = imm + (RA mod 2^c), c in 0..3: a jump into a table of JMPs */
JFN(JTAB) { return (uint32_t)i->imm + (uint32_t)(RA & ((1u << (i->c & 3)) - 1)); }
JFN(JBIT) { return (RA >> (i->c & 63)) & 1 ? (uint32_t)i->imm : pc; }

/* ---- dispatchers ---- */

static void bad_opcode(const struct insn *code, uint32_t pc, uint32_t ncode)
{
	if (pc < ncode)
		fprintf(stderr, "interp: bad opcode %u at %" PRIu32 "\n",
			code[pc].op, pc);
	else
		fprintf(stderr, "interp: pc %" PRIu32 " out of range\n", pc);
	exit(4);
}

WL_NOINLINE
static uint64_t run_switch(struct vm *v, const struct insn *code,
			   uint32_t ncode, uint64_t *executed)
{
	uint32_t pc = 0;
	uint64_t n = 0;

	for (;;) {
		const struct insn *i;
		if (pc >= ncode)
			bad_opcode(code, pc, ncode);
		i = &code[pc++];
		n++;
		v->hist[i->op]++;
		switch (i->op) {
		case OP_HALT:
			*executed += n;
			return v->r[0];
#define CASE_PLAIN(name)                                                    \
	case OP_##name:                                                     \
		op_##name(v, i);                                            \
		break;
#define CASE_JUMP(name)                                                     \
	case OP_##name:                                                     \
		pc = op_##name(v, i, pc);                                   \
		break;
			PLAIN_OPS(CASE_PLAIN)
			JUMP_OPS(CASE_JUMP)
#undef CASE_PLAIN
#undef CASE_JUMP
		default:
			bad_opcode(code, pc - 1, ncode);
		}
	}
}

/* run_threaded is the same machine with computed goto (a GNU C extension):
 * each handler ends in its own indirect jump to the next handler. */
WL_NOINLINE
static uint64_t run_threaded(struct vm *v, const struct insn *code,
			     uint32_t ncode, uint64_t *executed)
{
#define LABEL(name) [OP_##name] = &&l_##name,
	static void *const labels[OP_COUNT] = {
		[OP_HALT] = &&l_HALT, PLAIN_OPS(LABEL) JUMP_OPS(LABEL)
	};
#undef LABEL
	uint32_t pc = 0;
	uint64_t n = 0;
	const struct insn *i;

#define NEXT()                                                              \
	do {                                                                \
		if (pc >= ncode)                                            \
			goto bad;                                           \
		i = &code[pc++];                                            \
		n++;                                                        \
		v->hist[i->op]++;                                           \
		if (i->op >= OP_COUNT)                                      \
			goto bad_op;                                        \
		goto *labels[i->op];                                        \
	} while (0)

	NEXT();
l_HALT:
	*executed += n;
	return v->r[0];
#define H_PLAIN(name)                                                       \
	l_##name : op_##name(v, i);                                         \
	NEXT();
#define H_JUMP(name)                                                        \
	l_##name : pc = op_##name(v, i, pc);                                \
	NEXT();
	PLAIN_OPS(H_PLAIN)
	JUMP_OPS(H_JUMP)
#undef H_PLAIN
#undef H_JUMP
bad_op:
	pc--;
bad:
	bad_opcode(code, pc, ncode);
	return 0;
#undef NEXT
}

/* ---- a tiny assembler ---- */

#define MAXCODE 1024
#define MAXLAB 64

struct prog {
	struct insn code[MAXCODE];
	uint32_t n;
	int32_t lab[MAXLAB];
	struct {
		uint32_t at, lab;
	} fix[MAXCODE];
	uint32_t nfix;
};

static void emit(struct prog *p, enum op o, unsigned a, unsigned b,
		 unsigned c, int32_t imm)
{
	if (p->n >= MAXCODE) {
		fprintf(stderr, "interp: program too long\n");
		exit(5);
	}
	p->code[p->n++] = (struct insn){(uint8_t)o, (uint8_t)a, (uint8_t)b,
					(uint8_t)c, imm};
}

/* emit_j emits a control op whose immediate is label lab. */
static void emit_j(struct prog *p, enum op o, unsigned a, unsigned b,
		   unsigned c, unsigned lab)
{
	p->fix[p->nfix].at = p->n;
	p->fix[p->nfix].lab = lab;
	p->nfix++;
	emit(p, o, a, b, c, 0);
}

static void label(struct prog *p, unsigned lab)
{
	p->lab[lab] = (int32_t)p->n;
}

static void link_prog(struct prog *p)
{
	for (uint32_t k = 0; k < p->nfix; k++) {
		int32_t t = p->lab[p->fix[k].lab];
		if (t < 0) {
			fprintf(stderr, "interp: undefined label %u\n",
				p->fix[k].lab);
			exit(5);
		}
		p->code[p->fix[k].at].imm = t;
	}
}

/* Registers of the program. */
enum {
	R0, /* result */
	T1, T2, T3, T4, T5, T6, T7, T8,
	BUFA, /* string buffers (byte addresses) */
	BUFB,
	BUFC,
	RCI, /* RC4 indices */
	RCJ,
	X,    /* the bit-mixing state */
	ACC,  /* checksum accumulator */
};
#define ITER T8 /* outer loop counter, kept on the VM stack around blocks */

enum {
	L_OUTER, L_FAIL, L_INIT, L_BITS, L_ARITH, L_RC4, L_TAB, L_J0, L_J1,
	L_J2, L_J3, L_JA, L_JOIN, L_ODD, L_EVEN, L_SQOK, L_STACK, L_DONE,
};

/*
 * build assembles the program. r[T8] = iterations (set by the caller);
 * each iteration of the outer loop runs a string block, a bit block and an
 * arithmetic block (both subroutines), a stack block, a table block, a
 * 16-step RC4 inner loop and one of four arms picked through JTAB. Results
 * are folded into ACC, and self-checks (ATOI(ITOA(x)) == x, UNGRAY(GRAY(x))
 * == x, UNMORTON(MORTON(x, y)) == x, y, isqrt bounds) jump to L_FAIL.
 */
static void build(struct prog *p)
{
	for (unsigned k = 0; k < MAXLAB; k++)
		p->lab[k] = -1;
	p->n = p->nfix = 0;

	emit(p, OP_LDI, ACC, 0, 0, 0);
	emit(p, OP_LDI, RCI, 0, 0, 0);
	emit(p, OP_LDI, RCJ, 0, 0, 0);
	emit(p, OP_LDI, X, 0, 0, 0x1234567);
	emit(p, OP_LDHI, X, 0, 0, (int32_t)0x89abcdef);
	emit(p, OP_LDI, BUFA, 0, 0, 64);
	emit(p, OP_LDI, BUFB, 0, 0, 320);
	emit(p, OP_LDI, BUFC, 0, 0, 600);
	/* table set-up: 16 TINITs of 16 entries */
	emit(p, OP_LDI, T1, 0, 0, 0);
	emit(p, OP_LDI, T2, 0, 0, 16);
	emit(p, OP_LDI, T3, 0, 0, 77);
	label(p, L_INIT);
	emit(p, OP_TINIT, T3, T1, 0, 5);
	emit(p, OP_ADDI, T1, T1, 0, 16);
	emit_j(p, OP_LOOP, T2, 0, 0, L_INIT);

	label(p, L_OUTER);
	emit(p, OP_PUSH, ITER, 0, 0, 0);

	/* --- string block --- */
	emit(p, OP_MUL, T1, X, ACC, 0);
	emit(p, OP_SHRI, T1, T1, 0, 17);
	emit(p, OP_ITOA, T2, T1, BUFA, 0);   /* T2 = length */
	emit(p, OP_ATOI, T3, BUFA, 0, 0);
	emit_j(p, OP_JNE, T3, T1, 0, L_FAIL);
	emit(p, OP_SHASH, T4, BUFA, 0, 0);
	emit(p, OP_XOR, ACC, ACC, T4, 0);
	emit(p, OP_FILL, BUFB, T4, 0, 7);
	emit(p, OP_COPY, BUFC, BUFB, 0, 0);
	emit(p, OP_SCMP, T3, BUFB, BUFC, 0);
	emit_j(p, OP_JNZ, T3, 0, 0, L_FAIL);
	emit(p, OP_UPPER, BUFB, 0, 0, 0);
	emit(p, OP_ROT13, BUFB, 0, 0, 0);
	emit(p, OP_XORSTR, BUFB, X, 0, 0);
	emit(p, OP_SREV, BUFB, 0, 0, 0);
	emit(p, OP_SCMP, T3, BUFB, BUFC, 0);
	emit(p, OP_ADD, ACC, ACC, T3, 0);
	emit(p, OP_LDB, T5, BUFB, 0, 3);
	emit(p, OP_BCOUNT, T3, BUFC, T5, 0);
	emit(p, OP_MULADD, ACC, T3, T2, 0);
	emit(p, OP_B64, BUFC, BUFB, 0, 0);
	emit(p, OP_SHASH, T4, BUFC, 0, 0);
	emit(p, OP_HASH2, ACC, T4, 0, 0);
	emit(p, OP_HEXD, BUFA, X, 0, 0);
	emit(p, OP_CHK16, T4, BUFA, 0, 0);
	emit(p, OP_ADD, ACC, ACC, T4, 0);
	emit(p, OP_LDQ, T4, BUFC, 0, 3);
	emit(p, OP_STQ, T4, BUFA, 0, 21);
	emit(p, OP_LDW, T5, BUFB, 0, 2);
	emit(p, OP_STW, T5, BUFA, 0, 29);
	emit(p, OP_STB, T2, BUFA, 0, 33);
	emit(p, OP_LDQ, T4, BUFA, 0, 20);
	emit(p, OP_XOR, ACC, ACC, T4, 0);

	emit_j(p, OP_CALL, 0, 0, 0, L_BITS);
	emit_j(p, OP_CALL, 0, 0, 0, L_ARITH);

	/* --- stack block --- */
	emit(p, OP_PUSH, X, 0, 0, 0);
	emit(p, OP_PUSH, ACC, 0, 0, 0);
	emit(p, OP_PUSHI, 0, 0, 0, 1000003);
	emit(p, OP_DUP, 0, 0, 0, 0);
	emit(p, OP_SMUL, 0, 0, 0, 0);
	emit(p, OP_OVER, 0, 0, 0, 0);
	emit(p, OP_SXOR, 0, 0, 0, 0);
	emit(p, OP_PUSH, T1, 0, 0, 0);
	emit(p, OP_ROT3, 0, 0, 0, 0);
	emit(p, OP_SWAP, 0, 0, 0, 0);
	emit(p, OP_PUSH, T2, 0, 0, 0);
	emit(p, OP_PUSH, T3, 0, 0, 0);
	emit(p, OP_PUSH, T4, 0, 0, 0);
	emit(p, OP_PUSH, T5, 0, 0, 0);
	emit(p, OP_PUSHI, 0, 0, 0, -7);
	emit(p, OP_SREV4, 0, 0, 0, 0);
	emit(p, OP_SSUM, T6, 0, 0, 6);
	emit(p, OP_SDOT4, 0, 0, 0, 0);
	emit(p, OP_SADD, 0, 0, 0, 0);
	emit(p, OP_POP, T7, 0, 0, 0);
	emit(p, OP_XOR, ACC, ACC, T7, 0);
	emit(p, OP_ADD, ACC, ACC, T6, 0);

	/* --- table block --- */
	emit(p, OP_ANDI, T1, ACC, 0, 0xf8);
	emit(p, OP_TSORT8, 0, T1, 0, 0);
	emit(p, OP_TSUM8, T2, T1, 0, 0);
	emit(p, OP_TMAX8, T3, T1, 0, 0);
	emit(p, OP_ADD, ACC, ACC, T2, 0);
	emit(p, OP_MUL, T3, T3, T2, 0);
	emit(p, OP_XOR, ACC, ACC, T3, 0);
	emit(p, OP_MOV, T4, X, 0, 0);
	emit(p, OP_ADDI, T5, T1, 0, 40);
	emit(p, OP_TSHUF, T4, T5, 0, 0);
	emit(p, OP_THASH, T6, X, 0, 0);
	emit(p, OP_HASH2, ACC, T6, 0, 0);
	emit(p, OP_TLD, T7, T6, 0, 9);
	emit(p, OP_TADD, T7, T4, 0, 3);
	emit(p, OP_TST, ACC, T1, 0, 100);
	emit(p, OP_ADD, ACC, ACC, T7, 0);

	/* --- RC4 inner loop: the one hot spot --- */
	emit(p, OP_LDI, T1, 0, 0, 16);
	label(p, L_RC4);
	emit(p, OP_TSWAP, RCI, RCJ, T2, 0);
	emit(p, OP_XOR, T3, T3, T2, 0);
	emit_j(p, OP_LOOP, T1, 0, 0, L_RC4);
	emit(p, OP_HASH2, ACC, T3, 0, 0);

	/* --- one of four arms, by the low bits of ACC --- */
	emit_j(p, OP_JTAB, ACC, 0, 2, L_J0);
	label(p, L_J0);
	emit_j(p, OP_JMP, 0, 0, 0, L_JA);
	emit_j(p, OP_JMP, 0, 0, 0, L_J1);
	emit_j(p, OP_JMP, 0, 0, 0, L_J2);
	emit_j(p, OP_JMP, 0, 0, 0, L_J3);
	label(p, L_JA);
	emit(p, OP_ROTR, X, X, 0, 13);
	emit_j(p, OP_JMP, 0, 0, 0, L_JOIN);
	label(p, L_J1);
	emit(p, OP_XORI, X, X, 0, 0x5a5a);
	emit_j(p, OP_JMP, 0, 0, 0, L_JOIN);
	label(p, L_J2);
	emit(p, OP_ORI, T1, X, 0, 1);
	emit(p, OP_MUL, X, X, T1, 0);
	emit_j(p, OP_JMP, 0, 0, 0, L_JOIN);
	label(p, L_J3);
	emit(p, OP_NEG, X, X, 0, 0);
	label(p, L_JOIN);

	emit(p, OP_POP, ITER, 0, 0, 0);
	emit_j(p, OP_LOOP, ITER, 0, 0, L_OUTER);
	emit(p, OP_MOV, R0, ACC, 0, 0);
	emit(p, OP_HALT, 0, 0, 0, 0);

	label(p, L_FAIL);
	emit(p, OP_LDI, R0, 0, 0, -1);
	emit(p, OP_HALT, 0, 0, 0, 0);

	/* --- bit block: updates X, folds into ACC --- */
	label(p, L_BITS);
	emit(p, OP_POPC, T1, X, 0, 0);
	emit(p, OP_CLZ, T2, X, 0, 0);
	emit(p, OP_CTZ, T3, ACC, 0, 0);
	emit(p, OP_SHLI, T2, T2, 0, 6);
	emit(p, OP_OR, T1, T1, T2, 0);
	emit(p, OP_SHLI, T3, T3, 0, 12);
	emit(p, OP_OR, T1, T1, T3, 0);
	emit(p, OP_ADD, ACC, ACC, T1, 0);
	emit(p, OP_BSWAP, T4, X, 0, 0);
	emit(p, OP_BREV, T5, T4, 0, 0);
	emit(p, OP_GRAY, T6, T5, 0, 0);
	emit(p, OP_UNGRAY, T7, T6, 0, 0);
	emit_j(p, OP_JNE, T7, T5, 0, L_FAIL);
	emit(p, OP_XOR, ACC, ACC, T6, 0);
	emit(p, OP_MORTON, T4, X, ACC, 0);
	emit(p, OP_UNMORTON, T5, T4, T6, 0);
	emit(p, OP_LDI, T7, 0, 0, -1);
	emit(p, OP_SHRI, T7, T7, 0, 32);
	emit(p, OP_AND, T1, X, T7, 0);
	emit_j(p, OP_JNE, T5, T1, 0, L_FAIL);
	emit(p, OP_AND, T1, ACC, T7, 0);
	emit_j(p, OP_JNE, T6, T1, 0, L_FAIL);
	emit(p, OP_PARITY, T1, T4, 0, 0);
	emit(p, OP_BFX, T2, X, 17, 11);
	emit(p, OP_BFI, T4, T2, 40, 11);
	emit(p, OP_ROTL, T4, T4, T2, 0);
	emit(p, OP_SARI, T5, T4, 0, 9);
	emit(p, OP_SEXT, T6, T4, 0, 15);
	emit(p, OP_SATADD8, T7, T5, T6, 0);
	emit(p, OP_CRC32, ACC, T7, 0, 0);
	emit(p, OP_ADD, ACC, ACC, T1, 0);
	emit_j(p, OP_JBIT, X, 0, 7, L_ODD);
	emit(p, OP_ANDI, T1, X, 0, 0x7fffffff);
	emit_j(p, OP_JMP, 0, 0, 0, L_EVEN);
	label(p, L_ODD);
	emit(p, OP_XORI, T1, X, 0, -1);
	label(p, L_EVEN);
	emit(p, OP_MIX, X, T1, 0, 3);
	emit(p, OP_XOR, X, X, T7, 0);
	emit(p, OP_RET, 0, 0, 0, 0);

	/* --- arithmetic block --- */
	label(p, L_ARITH);
	emit(p, OP_MULHI, T1, X, ACC, 0);
	emit(p, OP_SHRI, T2, X, 0, 40);
	emit(p, OP_ADDI, T2, T2, 0, 3);
	emit(p, OP_DIVU, T3, X, T2, 0);
	emit(p, OP_MODU, T4, X, T2, 0);
	emit(p, OP_MUL, T5, T3, T2, 0);
	emit(p, OP_ADD, T5, T5, T4, 0);
	emit_j(p, OP_JNE, T5, X, 0, L_FAIL);
	emit(p, OP_MIN, T5, T1, T3, 0);
	emit(p, OP_MAX, T6, T1, T3, 0);
	emit(p, OP_ABSD, T7, T5, T6, 0);
	emit(p, OP_SUB, T7, T7, T4, 0);
	emit(p, OP_XOR, ACC, ACC, T7, 0);
	emit(p, OP_SHRI, T1, X, 0, 8);
	emit(p, OP_ISQRT, T2, T1, 0, 0);
	emit(p, OP_MUL, T3, T2, T2, 0);
	emit_j(p, OP_JLT, T1, T3, 0, L_FAIL);
	emit(p, OP_ADDI, T4, T2, 0, 1);
	emit(p, OP_MUL, T4, T4, T4, 0);
	emit_j(p, OP_JLT, T1, T4, 0, L_SQOK);
	emit_j(p, OP_JMP, 0, 0, 0, L_FAIL);
	label(p, L_SQOK);
	emit(p, OP_ADD, ACC, ACC, T2, 0);
	emit(p, OP_SHRI, T3, ACC, 0, 20);
	emit(p, OP_SHRI, T4, X, 0, 24);
	emit(p, OP_GCD, T5, T3, T4, 0);
	emit(p, OP_MULADD, ACC, T5, T2, 0);
	emit(p, OP_CMPLT, T6, T3, T4, 0);
	emit(p, OP_SEL, T6, T3, T4, 0);
	emit(p, OP_AVGU, T7, T6, T5, 0);
	emit(p, OP_POLY, T1, T7, 0, 11);
	emit(p, OP_SUB, ACC, ACC, T1, 0);
	emit_j(p, OP_JGE, ACC, X, 0, L_DONE);
	emit(p, OP_ROTL, ACC, ACC, T2, 0);
	label(p, L_DONE);
	emit_j(p, OP_JEQ, T1, T7, 0, L_STACK);
	emit(p, OP_ADDI, ACC, ACC, 0, 1);
	label(p, L_STACK);
	emit_j(p, OP_JZ, T5, 0, 0, L_TAB);
	emit(p, OP_XOR, ACC, ACC, T5, 0);
	label(p, L_TAB);
	emit(p, OP_RET, 0, 0, 0, 0);

	link_prog(p);
}

static void vm_init(struct vm *v)
{
	*v = (struct vm){0};
	for (uint32_t k = 0; k < MEMSZ; k++)
		v->m[k] = (uint8_t)('a' + k % 26);
}

static uint64_t vm_hash(const struct vm *v)
{
	uint64_t h = WL_SEED0;

	for (unsigned k = 0; k < NREGS; k++)
		h = wl_mix(h, v->r[k]);
	for (unsigned k = 0; k < STK; k++)
		h = wl_mix(h, v->s[k]);
	h = wl_mix(h, (uint64_t)v->sp << 32 | v->csp);
	for (unsigned k = 0; k < TABSZ; k++)
		h = wl_mix(h, v->tab[k]);
	for (unsigned k = 0; k < MEMSZ; k += 8) {
		uint64_t w = 0;
		for (unsigned b = 0; b < 8; b++)
			w |= (uint64_t)v->m[k + b] << (8 * b);
		h = wl_mix(h, w);
	}
	for (unsigned k = 0; k < 256; k++)
		h = wl_mix(h, v->hist[k]);
	return h;
}

static unsigned ops_used(const struct vm *v)
{
	unsigned n = 0;
	for (unsigned k = 0; k < OP_COUNT; k++)
		n += v->hist[k] != 0;
	return n;
}

static struct prog prog;
static struct vm vms, vmt;

int main(int argc, char **argv)
{
	uint64_t scale = wl_arg(argc, argv, 1, 1, 1000);
	uint64_t iters = 750 * scale;
	uint64_t ns = 0, nt = 0, rs, rt, hs, ht, h = WL_SEED0;

	init_crc();
	build(&prog);
	printf("interp: scale %" PRIu64 ", %u opcodes, program of %" PRIu32
	       " instructions, %" PRIu64 " iterations\n",
	       scale, (unsigned)OP_COUNT, prog.n, iters);

	vm_init(&vms);
	vms.r[ITER] = iters;
	rs = run_switch(&vms, prog.code, prog.n, &ns);
	hs = vm_hash(&vms);
	printf("switch   result %016" PRIx64 " vm insns %-9" PRIu64
	       " opcodes used %u\n", rs, ns, ops_used(&vms));

	vm_init(&vmt);
	vmt.r[ITER] = iters;
	rt = run_threaded(&vmt, prog.code, prog.n, &nt);
	ht = vm_hash(&vmt);
	printf("threaded result %016" PRIx64 " vm insns %-9" PRIu64
	       " opcodes used %u\n", rt, nt, ops_used(&vmt));

	printf("%s\n", rs == rt && ns == nt && hs == ht ? "switch==threaded"
							: "MISMATCH");
	h = wl_mix(h, rs);
	h = wl_mix(h, rt);
	h = wl_mix(h, ns + nt);
	h = wl_mix(h, hs);
	h = wl_mix(h, ht);
	wl_checksum("interp", h);
	return 0;
}
