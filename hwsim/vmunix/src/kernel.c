/*
 * vmunix - the kernel of dcpi's simulated Alpha hosts.
 *
 * Every cycle a simulated CPU spends in the kernel is spent here, executing
 * Alpha code: system call entry and dispatch, copying to and from user
 * space, the clock tick and the scheduler's time slicing, and the idle
 * loop. The effects no CPU instruction can have - console output, creating
 * a process, choosing which process runs next - are requests to the
 * simulator through CALL_PAL cserve (simcall below), the way a real kernel
 * reaches its devices.
 *
 * It is freestanding C: no libc, no floating point.
 */

#define NCPU 64

/* Simulator calls: the function code goes in a0 (see hwsim/kernel.go). */
#define SIM_SYSCALL       1 /* perform system call v0 of the current process */
#define SIM_CONSOLE_WRITE 2 /* (fd, kernel buffer, length) -> bytes or -errno */
#define SIM_CONSOLE_READ  3 /* (fd, kernel buffer, length) -> bytes or -errno */
#define SIM_SETRET        4 /* (value, error flag): the system call's result */
#define SIM_SCHEDULE      5 /* choose the process this CPU runs next */
#define SIM_USER_RANGE    6 /* (address, length, write) -> 0 or -EFAULT */
#define SIM_TICK          7 /* the clock ticked on this CPU */
#define SIM_PAGEFAULT     8 /* (address) -> 0 mapped, else the process was killed */

#define EFAULT 14
#define EINVAL 22

#define NR_read  3
#define NR_write 4

/* Per-CPU state, one cache line (64 bytes) each so CPUs never share a
 * line. hwsim reads and writes need_resched at offset 0. */
struct cpu_data {
	volatile long need_resched;
	long ticks_left;
	long ticks;
	long syscalls;
	long interrupts;
	long idle_loops;
	long schedules;
	long pad;
};

struct cpu_data cpu_data[NCPU] __attribute__((aligned(64)));
volatile unsigned long jiffies;
long timeslice_ticks = 10; /* hwsim writes the configured value at boot */

/* Kernel stacks and copy buffers, one per CPU. hwsim sets sp to the top of
 * this CPU's stack at every entry. */
unsigned char kernel_stacks[NCPU][16384] __attribute__((aligned(64)));
static unsigned char bounce[NCPU][8192] __attribute__((aligned(64)));

/* The frame entSys builds: saved registers 0-29, by number. */
struct frame {
	unsigned long r[30];
};

static inline long simcall(long fn, long a1, long a2, long a3)
{
	register long v0 __asm__("$0");
	register long a0r __asm__("$16") = fn;
	register long a1r __asm__("$17") = a1;
	register long a2r __asm__("$18") = a2;
	register long a3r __asm__("$19") = a3;
	__asm__ __volatile__("call_pal 0x09"
			     : "=r"(v0), "+r"(a0r), "+r"(a1r), "+r"(a2r), "+r"(a3r)
			     :
			     : "$1", "$22", "$23", "$24", "$25", "$27", "$28", "memory");
	return v0;
}

static inline long whami(void)
{
	register long v0 __asm__("$0");
	__asm__ __volatile__("call_pal 0x3c" : "=r"(v0) : : "memory");
	return v0;
}

static inline void rti(void)
{
	__asm__ __volatile__("call_pal 0x3f" : : : "memory");
}

/* wtint waits for an interrupt: the CPU stops issuing until the next clock
 * tick or until the simulator gives it work. Cycles spent waiting are
 * sampled, like any PAL call's, at the instruction after the call. */
static inline void wtint(void)
{
	register long a0 __asm__("$16") = 0;
	__asm__ __volatile__("call_pal 0x3e" : "+r"(a0) : : "$0", "memory");
}

/* copy moves bytes between user space and a kernel buffer a quadword at a
 * time when both are aligned, else a byte at a time, as the 21164 (no
 * byte loads) makes gcc do with ldq_u and extbl. */
static void __attribute__((noinline)) copy(unsigned char *dst, const unsigned char *src, long n)
{
	if ((((unsigned long)dst | (unsigned long)src) & 7) == 0) {
		unsigned long *d = (unsigned long *)dst;
		const unsigned long *s = (const unsigned long *)src;
		for (; n >= 8; n -= 8)
			*d++ = *s++;
		dst = (unsigned char *)d;
		src = (const unsigned char *)s;
	}
	while (n-- > 0)
		*dst++ = *src++;
}

static long __attribute__((noinline)) copy_from_user(void *dst, unsigned long src, long n)
{
	if (simcall(SIM_USER_RANGE, src, n, 0) != 0)
		return -EFAULT;
	copy(dst, (const unsigned char *)src, n);
	return 0;
}

static long __attribute__((noinline)) copy_to_user(unsigned long dst, const void *src, long n)
{
	if (simcall(SIM_USER_RANGE, dst, n, 1) != 0)
		return -EFAULT;
	copy((unsigned char *)dst, src, n);
	return 0;
}

static long sys_write(long me, long fd, unsigned long buf, long n)
{
	long done = 0;
	if (n < 0)
		return -EINVAL;
	while (done < n) {
		long chunk = n - done;
		if (chunk > (long)sizeof bounce[0])
			chunk = sizeof bounce[0];
		long err = copy_from_user(bounce[me], buf + done, chunk);
		if (err)
			return done ? done : err;
		long r = simcall(SIM_CONSOLE_WRITE, fd, (long)bounce[me], chunk);
		if (r < 0)
			return done ? done : r;
		done += r;
		if (r < chunk)
			break;
	}
	return done;
}

static long sys_read(long me, long fd, unsigned long buf, long n)
{
	if (n < 0)
		return -EINVAL;
	if (n > (long)sizeof bounce[0])
		n = sizeof bounce[0];
	long r = simcall(SIM_CONSOLE_READ, fd, (long)bounce[me], n);
	if (r <= 0)
		return r;
	long err = copy_to_user(buf, bounce[me], r);
	return err ? err : r;
}

/* swpipl sets the interrupt priority level and returns the old one. At 7
 * nothing interrupts, performance counters included: code run there is one
 * of DCPI's blind spots (sec. 4.1.3); its samples land after it. */
static inline long swpipl(long ipl)
{
	register long v0 __asm__("$0");
	register long a0 __asm__("$16") = ipl;
	__asm__ __volatile__("call_pal 0x35" : "=r"(v0), "+r"(a0) : : "memory");
	return v0;
}

/* schedule runs with interrupts off, as Linux's does. */
void schedule(struct cpu_data *cd)
{
	long ipl = swpipl(7);

	cd->need_resched = 0;
	cd->schedules++;
	cd->ticks_left = timeslice_ticks;
	simcall(SIM_SCHEDULE, 0, 0, 0);
	swpipl(ipl);
}

/* syscall_dispatch runs the system call whose registers entSys saved in
 * f: console I/O here, everything else in the simulator. */
void syscall_dispatch(struct frame *f)
{
	long me = whami();
	struct cpu_data *cd = &cpu_data[me];
	long nr = f->r[0], r;

	cd->syscalls++;
	switch (nr) {
	case NR_write:
		r = sys_write(me, f->r[16], f->r[17], f->r[18]);
		simcall(SIM_SETRET, r < 0 ? -r : r, r < 0, 0);
		break;
	case NR_read:
		r = sys_read(me, f->r[16], f->r[17], f->r[18]);
		simcall(SIM_SETRET, r < 0 ? -r : r, r < 0, 0);
		break;
	default:
		simcall(SIM_SYSCALL, nr, 0, 0);
	}
	if (cd->need_resched)
		schedule(cd);
}

static void scheduler_tick(struct cpu_data *cd)
{
	if (--cd->ticks_left <= 0) {
		cd->ticks_left = timeslice_ticks;
		cd->need_resched = 1;
	}
}

static void timer_interrupt(long me, struct cpu_data *cd, long from_user)
{
	if (me == 0)
		jiffies++;
	cd->ticks++;
	simcall(SIM_TICK, 0, 0, 0);
	if (from_user)
		scheduler_tick(cd);
}

void do_entInt(long type, long from_user)
{
	long me = whami();
	struct cpu_data *cd = &cpu_data[me];

	cd->interrupts++;
	if (type == 1)
		timer_interrupt(me, cd, from_user);
	if (cd->need_resched && from_user)
		schedule(cd);
}

/* clear_page zeroes a newly mapped page, as Linux does before a process
 * may see it. */
static void __attribute__((noinline)) clear_page(unsigned long addr)
{
	unsigned long *p = (unsigned long *)(addr & ~8191UL);
	for (int i = 0; i < 8192 / 8; i += 4) {
		p[i] = 0;
		p[i + 1] = 0;
		p[i + 2] = 0;
		p[i + 3] = 0;
	}
}

/* do_page_fault handles a user access to a page of one of the process's
 * areas that is not present yet: the simulator maps it (or kills the
 * process if the address is in no area), and the kernel clears it. */
void do_page_fault(unsigned long addr)
{
	struct cpu_data *cd = &cpu_data[whami()];

	if (simcall(SIM_PAGEFAULT, addr, 0, 0) == 0)
		clear_page(addr);
	if (cd->need_resched)
		schedule(cd);
}

/* cpu_idle is where a CPU with nothing to run waits, as Linux/Alpha's
 * does, with wtint; need_resched, which the simulator sets when it gives
 * this CPU a process, ends the wait. Its samples are a profile's idle time. */
void cpu_idle(void)
{
	struct cpu_data *cd = &cpu_data[whami()];

	for (;;) {
		cd->idle_loops++;
		if (cd->need_resched) {
			schedule(cd);
			rti();
		}
		wtint();
	}
}
