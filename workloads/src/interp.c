/*
 * interp - a bytecode interpreter for a small register machine, run twice
 * over the same programs: once dispatching through a switch (compiled to a
 * jump table: ldl + addq gp + jmp) and once with computed goto (a jmp per
 * instruction, threaded). Indirect jumps that the 21164 mispredicts, a hot
 * dispatch loop, and integer division (the VM's MOD) through glibc's __remq.
 *
 * The bytecode programs: count primes below N by trial division, sum the
 * Collatz path lengths of 1..M, and a checksum loop over shifts and xors.
 *
 * usage: interp [scale]   (default 1; work grows linearly)
 */
#include "wl.h"

enum op {
	OP_HALT,
	OP_LOADI, /* r[a] = imm */
	OP_MOV,	  /* r[a] = r[b] */
	OP_ADD,	  /* r[a] = r[b] + r[c] */
	OP_ADDI,  /* r[a] = r[b] + imm */
	OP_SUB,	  /* r[a] = r[b] - r[c] */
	OP_MUL,	  /* r[a] = r[b] * r[c] */
	OP_MOD,	  /* r[a] = r[b] % r[c] */
	OP_SHRI,  /* r[a] = r[b] >> imm */
	OP_SHLI,  /* r[a] = r[b] << imm */
	OP_AND,	  /* r[a] = r[b] & r[c] */
	OP_ANDI,  /* r[a] = r[b] & imm */
	OP_XOR,	  /* r[a] = r[b] ^ r[c] */
	OP_JMP,	  /* pc = imm */
	OP_JLT,	  /* if r[a] < r[b] pc = imm */
	OP_JLE,	  /* if r[a] <= r[b] pc = imm */
	OP_JEQ,	  /* if r[a] == r[b] pc = imm */
	OP_JNZ,	  /* if r[a] != 0 pc = imm */
	OP_JZ,	  /* if r[a] == 0 pc = imm */
	OP_COUNT
};

struct insn {
	uint8_t op, a, b, c;
	int32_t imm;
};

#define I(o, A, B, C, IMM) {(uint8_t)(o), (A), (B), (C), (IMM)}

/*
 * primes: r1 = limit (set by the caller), result in r0.
 *   r0 = 0; n = 2
 *   loop: if n >= limit goto done
 *         d = 2
 *   try:  if d*d > n goto prime
 *         if n % d == 0 goto next
 *         d++ ; goto try
 *   prime: r0++
 *   next: n++ ; goto loop
 */
static const struct insn primes[] = {
	I(OP_LOADI, 0, 0, 0, 0),   /* 0: count = 0 */
	I(OP_LOADI, 2, 0, 0, 2),   /* 1: n = 2 */
	I(OP_JLE, 1, 2, 0, 14),	   /* 2: if limit <= n goto done */
	I(OP_LOADI, 3, 0, 0, 2),   /* 3: d = 2 */
	I(OP_MUL, 4, 3, 3, 0),	   /* 4: t = d*d */
	I(OP_JLT, 2, 4, 0, 11),	   /* 5: if n < t goto prime */
	I(OP_MOD, 5, 2, 3, 0),	   /* 6: m = n % d */
	I(OP_JZ, 5, 0, 0, 12),	   /* 7: if m == 0 goto next */
	I(OP_ADDI, 3, 3, 0, 1),	   /* 8: d++ */
	I(OP_JMP, 0, 0, 0, 4),	   /* 9: goto try */
	I(OP_HALT, 0, 0, 0, 0),	   /* 10: (unreached) */
	I(OP_ADDI, 0, 0, 0, 1),	   /* 11: prime: count++ */
	I(OP_ADDI, 2, 2, 0, 1),	   /* 12: next: n++ */
	I(OP_JMP, 0, 0, 0, 2),	   /* 13: goto loop */
	I(OP_HALT, 0, 0, 0, 0),	   /* 14: done */
};

/*
 * collatz: r1 = M; r0 = sum over i in 1..M of the steps to reach 1.
 */
static const struct insn collatz[] = {
	I(OP_LOADI, 0, 0, 0, 0),   /* 0: sum = 0 */
	I(OP_LOADI, 2, 0, 0, 1),   /* 1: i = 1 */
	I(OP_LOADI, 6, 0, 0, 1),   /* 2: one = 1 */
	I(OP_JLT, 1, 2, 0, 18),	   /* 3: loop: if M < i goto done */
	I(OP_MOV, 3, 2, 0, 0),	   /* 4: x = i */
	I(OP_JEQ, 3, 6, 0, 16),	   /* 5: step: if x == 1 goto nexti */
	I(OP_ANDI, 4, 3, 0, 1),	   /* 6: odd = x & 1 */
	I(OP_JNZ, 4, 0, 0, 10),	   /* 7: if odd goto odd */
	I(OP_SHRI, 3, 3, 0, 1),	   /* 8: x >>= 1 */
	I(OP_JMP, 0, 0, 0, 14),	   /* 9: goto count */
	I(OP_SHLI, 5, 3, 0, 1),	   /* 10: odd: t = 2x */
	I(OP_ADD, 3, 3, 5, 0),	   /* 11: x = 3x */
	I(OP_ADDI, 3, 3, 0, 1),	   /* 12: x = 3x + 1 */
	I(OP_JMP, 0, 0, 0, 14),	   /* 13: goto count */
	I(OP_ADDI, 0, 0, 0, 1),	   /* 14: count: sum++ */
	I(OP_JMP, 0, 0, 0, 5),	   /* 15: goto step */
	I(OP_ADDI, 2, 2, 0, 1),	   /* 16: nexti: i++ */
	I(OP_JMP, 0, 0, 0, 3),	   /* 17: goto loop */
	I(OP_HALT, 0, 0, 0, 0),	   /* 18: done */
};

/*
 * mixer: r1 = N rounds of x = ((x << 5) ^ (x >> 3) ^ i) & 0xffffffff,
 * result x in r0.
 */
static const struct insn mixer[] = {
	I(OP_LOADI, 0, 0, 0, 12345), /* 0: x */
	I(OP_LOADI, 2, 0, 0, 0),     /* 1: i = 0 */
	I(OP_LOADI, 7, 0, 0, -1),    /* 2: r7 = all ones */
	I(OP_SHRI, 7, 7, 0, 32),     /* 3: r7 = 0xffffffff */
	I(OP_JLE, 1, 2, 0, 12),	     /* 4: loop: if N <= i goto done */
	I(OP_SHLI, 3, 0, 0, 5),	     /* 5 */
	I(OP_SHRI, 4, 0, 0, 3),	     /* 6 */
	I(OP_XOR, 3, 3, 4, 0),	     /* 7 */
	I(OP_XOR, 3, 3, 2, 0),	     /* 8 */
	I(OP_AND, 0, 3, 7, 0),	     /* 9 */
	I(OP_ADDI, 2, 2, 0, 1),	     /* 10: i++ */
	I(OP_JMP, 0, 0, 0, 4),	     /* 11 */
	I(OP_HALT, 0, 0, 0, 0),	     /* 12: done */
};

/* Registers hold uint64_t so every operation is defined; comparisons treat
 * them as unsigned and the programs only use non-negative values. */
#define NREGS 8

WL_NOINLINE
static uint64_t run_switch(const struct insn *code, uint64_t arg,
			   uint64_t *executed)
{
	uint64_t r[NREGS] = {0};
	uint64_t pc = 0, n = 0;

	r[1] = arg;
	for (;;) {
		const struct insn *i = &code[pc++];
		n++;
		switch (i->op) {
		case OP_HALT:
			*executed += n;
			return r[0];
		case OP_LOADI:
			r[i->a] = (uint64_t)(int64_t)i->imm;
			break;
		case OP_MOV:
			r[i->a] = r[i->b];
			break;
		case OP_ADD:
			r[i->a] = r[i->b] + r[i->c];
			break;
		case OP_ADDI:
			r[i->a] = r[i->b] + (uint64_t)(int64_t)i->imm;
			break;
		case OP_SUB:
			r[i->a] = r[i->b] - r[i->c];
			break;
		case OP_MUL:
			r[i->a] = r[i->b] * r[i->c];
			break;
		case OP_MOD:
			r[i->a] = r[i->c] ? r[i->b] % r[i->c] : 0;
			break;
		case OP_SHRI:
			r[i->a] = r[i->b] >> (i->imm & 63);
			break;
		case OP_SHLI:
			r[i->a] = r[i->b] << (i->imm & 63);
			break;
		case OP_AND:
			r[i->a] = r[i->b] & r[i->c];
			break;
		case OP_ANDI:
			r[i->a] = r[i->b] & (uint64_t)(int64_t)i->imm;
			break;
		case OP_XOR:
			r[i->a] = r[i->b] ^ r[i->c];
			break;
		case OP_JMP:
			pc = (uint64_t)i->imm;
			break;
		case OP_JLT:
			if (r[i->a] < r[i->b])
				pc = (uint64_t)i->imm;
			break;
		case OP_JLE:
			if (r[i->a] <= r[i->b])
				pc = (uint64_t)i->imm;
			break;
		case OP_JEQ:
			if (r[i->a] == r[i->b])
				pc = (uint64_t)i->imm;
			break;
		case OP_JNZ:
			if (r[i->a] != 0)
				pc = (uint64_t)i->imm;
			break;
		case OP_JZ:
			if (r[i->a] == 0)
				pc = (uint64_t)i->imm;
			break;
		default:
			fprintf(stderr, "interp: bad opcode %u at %" PRIu64 "\n",
				i->op, pc - 1);
			exit(4);
		}
	}
}

/* run_threaded is the same machine with computed goto (a GNU C extension):
 * each handler ends in its own indirect jump to the next handler. */
WL_NOINLINE
static uint64_t run_threaded(const struct insn *code, uint64_t arg,
			     uint64_t *executed)
{
	static void *const labels[OP_COUNT] = {
		&&l_halt, &&l_loadi, &&l_mov, &&l_add,	&&l_addi,
		&&l_sub,  &&l_mul,   &&l_mod, &&l_shri, &&l_shli,
		&&l_and,  &&l_andi,  &&l_xor, &&l_jmp,	&&l_jlt,
		&&l_jle,  &&l_jeq,   &&l_jnz, &&l_jz,
	};
	uint64_t r[NREGS] = {0};
	const struct insn *i = code;
	uint64_t n = 0;

	r[1] = arg;
#define NEXT()                                                              \
	do {                                                                \
		n++;                                                        \
		if (i->op >= OP_COUNT)                                      \
			goto bad;                                           \
		goto *labels[i->op];                                        \
	} while (0)
#define JUMP(cond)                                                          \
	do {                                                                \
		i = (cond) ? code + i->imm : i + 1;                         \
		NEXT();                                                     \
	} while (0)

	NEXT();
l_halt:
	*executed += n;
	return r[0];
l_loadi:
	r[i->a] = (uint64_t)(int64_t)i->imm;
	i++;
	NEXT();
l_mov:
	r[i->a] = r[i->b];
	i++;
	NEXT();
l_add:
	r[i->a] = r[i->b] + r[i->c];
	i++;
	NEXT();
l_addi:
	r[i->a] = r[i->b] + (uint64_t)(int64_t)i->imm;
	i++;
	NEXT();
l_sub:
	r[i->a] = r[i->b] - r[i->c];
	i++;
	NEXT();
l_mul:
	r[i->a] = r[i->b] * r[i->c];
	i++;
	NEXT();
l_mod:
	r[i->a] = r[i->c] ? r[i->b] % r[i->c] : 0;
	i++;
	NEXT();
l_shri:
	r[i->a] = r[i->b] >> (i->imm & 63);
	i++;
	NEXT();
l_shli:
	r[i->a] = r[i->b] << (i->imm & 63);
	i++;
	NEXT();
l_and:
	r[i->a] = r[i->b] & r[i->c];
	i++;
	NEXT();
l_andi:
	r[i->a] = r[i->b] & (uint64_t)(int64_t)i->imm;
	i++;
	NEXT();
l_xor:
	r[i->a] = r[i->b] ^ r[i->c];
	i++;
	NEXT();
l_jmp:
	JUMP(1);
l_jlt:
	JUMP(r[i->a] < r[i->b]);
l_jle:
	JUMP(r[i->a] <= r[i->b]);
l_jeq:
	JUMP(r[i->a] == r[i->b]);
l_jnz:
	JUMP(r[i->a] != 0);
l_jz:
	JUMP(r[i->a] == 0);
bad:
	fprintf(stderr, "interp: bad opcode %u\n", i->op);
	exit(4);
#undef NEXT
#undef JUMP
}

struct program {
	const char *name;
	const struct insn *code;
	uint64_t arg;
};

int main(int argc, char **argv)
{
	uint64_t scale = wl_arg(argc, argv, 1, 1, 1000);
	const struct program progs[] = {
		{"primes", primes, 2500 * scale},
		{"collatz", collatz, 600 * scale},
		{"mixer", mixer, 15000 * scale},
	};
	uint64_t h = WL_SEED0;

	printf("interp: scale %" PRIu64 "\n", scale);
	for (size_t p = 0; p < sizeof progs / sizeof progs[0]; p++) {
		uint64_t ns = 0, nt = 0;
		uint64_t rs = run_switch(progs[p].code, progs[p].arg, &ns);
		uint64_t rt = run_threaded(progs[p].code, progs[p].arg, &nt);
		printf("%-8s arg %-7" PRIu64 " result %-10" PRIu64
		       " vm insns %-9" PRIu64 " %s\n", progs[p].name,
		       progs[p].arg, rs, ns,
		       rs == rt && ns == nt ? "switch==threaded" : "MISMATCH");
		h = wl_mix(h, rs);
		h = wl_mix(h, rt);
		h = wl_mix(h, ns + nt);
	}
	wl_checksum("interp", h);
	return 0;
}
