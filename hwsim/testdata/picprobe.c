/* picprobe: reads hwsim's rdpic (call_pal 0xb0) around a loop of D-cache
 * misses, without libc, so that the binary stays small. Modes:
 *   picprobe N      touch N new 32-byte lines; print the dmiss and imiss
 *                   deltas and the final counts
 *   picprobe fork N the parent reads, forks; the child prints its first
 *                   read and runs the loop; the parent prints its read
 * Output: "name value" lines, values in hex (no division without libc). */
#define LINES (1 << 16)
static char buf[LINES * 32 + 64];

static long sys3(long n, long a, long b, long c) {
	register long v0 __asm__("$0") = n;
	register long a0 __asm__("$16") = a;
	register long a1 __asm__("$17") = b;
	register long a2 __asm__("$18") = c;
	register long a3 __asm__("$19");
	__asm__ volatile("call_pal 0x83" : "+r"(v0), "+r"(a0), "+r"(a1), "+r"(a2), "=r"(a3)
	                 : : "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$20", "$21", "$22", "$23",
	                   "$24", "$25", "$27", "$28", "memory");
	return a3 ? -v0 : v0;
}

static void rdpic(unsigned long *a, unsigned long *b) {
	register unsigned long v0 __asm__("$0");
	register unsigned long t0 __asm__("$1");
	__asm__ volatile("call_pal 0xb0" : "=r"(v0), "=r"(t0) : : "memory");
	*a = v0;
	*b = t0;
}

static void put(const char *name, unsigned long v) {
	char line[64];
	int n = 0;
	while (*name)
		line[n++] = *name++;
	line[n++] = ' ';
	for (int s = 60; s >= 0; s -= 4)
		line[n++] = "0123456789abcdef"[(v >> s) & 15];
	line[n++] = '\n';
	sys3(4, 1, (long)line, n);
}

static unsigned long hex(const char *s) {
	unsigned long v = 0;
	for (; *s; s++)
		v = v * 16 + (*s <= '9' ? *s - '0' : *s - 'a' + 10);
	return v;
}

static unsigned long touch(unsigned long n) {
	unsigned long sum = 0;
	volatile char *p = buf;
	for (unsigned long i = 0; i < n && i < LINES; i++)
		sum += p[i * 32];
	return sum;
}

static void loop(unsigned long n) {
	unsigned long d0, i0, d1, i1;
	rdpic(&d0, &i0);
	touch(n);
	rdpic(&d1, &i1);
	put("dmiss", d1 - d0);
	put("imiss", i1 - i0);
	put("dmiss_total", d1);
}

void cstart(long *sp) {
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	if (argc >= 3 && argv[1][0] == 'f') {
		unsigned long d, i;
		rdpic(&d, &i);
		long pid = sys3(312, 20, 0, 0); /* clone(SIGCHLD): 20 on Alpha */
		if (pid == 0) {
			unsigned long cd, ci;
			rdpic(&cd, &ci);
			put("child_first", cd);
			put("parent_before", d);
			loop(hex(argv[2]));
			sys3(1, 0, 0, 0);
		}
		int status;
		sys3(7, pid, (long)&status, 0); /* wait4 */
		rdpic(&d, &i);
		put("parent_after", d);
	} else if (argc >= 2) {
		loop(hex(argv[1]));
	}
	sys3(405, 0, 0, 0); /* exit_group */
	for (;;)
		;
}

__asm__(".globl _start\n"
        ".ent _start\n"
        "_start:\n"
        "	br $29, 1f\n"
        "1:	ldgp $29, 0($29)\n"
        "	mov $30, $16\n"
        "	lda $27, cstart\n"
        "	jsr $26, ($27)\n"
        ".end _start\n");
