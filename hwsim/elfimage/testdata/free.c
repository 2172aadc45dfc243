// free.c: a freestanding static Alpha Linux program for the elfimage tests.
// No libc. It has the kinds of symbols real images have: _start, a bare
// assembler label (NOTYPE, size 0); spin, an assembler function with no .size
// (FUNC, size 0) containing a local label; sized C functions, global and
// local; a weak alias; objects in .rodata, .sdata and .sbss; and a TLS
// variable, so that the image has a PT_TLS segment.
//
// Built by the tests and committed as testdata/free (see build_test.go):
//   alpha-linux-gnu-gcc -O2 -mcpu=ev5 -static -nostdlib -ffreestanding
//     -Wl,--build-id -Wl,--no-relax -Wl,-z,max-page-size=0x2000
//     -Wl,-z,common-page-size=0x2000 -o free free.c
// It writes "hello\n" and exits with status 45 (sum(10) with argc 1).

static long sys(long n, long a0, long a1, long a2) {
	register long v0 __asm__("$0") = n;
	register long r16 __asm__("$16") = a0;
	register long r17 __asm__("$17") = a1;
	register long r18 __asm__("$18") = a2;
	__asm__ volatile("call_pal 0x83"
			 : "+r"(v0), "+r"(r16), "+r"(r17), "+r"(r18)
			 :
			 : "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$19", "$20",
			   "$21", "$22", "$23", "$24", "$25", "$27", "$28", "memory");
	return v0;
}

long counter;
const char msg[] = "hello\n";
__thread long tls_counter = 7;
long spin(long n);

__attribute__((noinline)) long sum(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * counter;
	return s;
}

__attribute__((noinline)) static void emit(void) { sys(4, 1, (long)msg, sizeof msg - 1); }

void do_emit(void) __attribute__((weak, alias("emit_alias")));
void emit_alias(void) { emit(); }

void cstart(long *sp) {
	counter = sp[0];
	do_emit();
	spin(3);
	sys(1, sum(10) & 0x7f, 0, 0);
	for (;;)
		;
}

__asm__(".text\n"
	".globl _start\n"
	"_start:\n"
	"\tbr $27,1f\n"
	"1:\tldgp $29,0($27)\n"
	"\tmov $30,$16\n"
	"\tjsr $26,cstart\n"
	"\tcall_pal 0\n"
	".align 4\n"
	".globl spin\n"
	".type spin,@function\n"
	"spin:\n"
	"\tmov $16,$0\n"
	".Lspin_loop:\n"
	"\tsubq $0,1,$0\n"
	"\tbgt $0,.Lspin_loop\n"
	"\tret $31,($26),1\n");
