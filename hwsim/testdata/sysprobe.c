/* sysprobe exercises the simulated kernel's system calls from a static
 * glibc program; hwsim's tests run it and check what it prints. Each mode
 * is selected by argv[1]. Build: see Makefile in this directory. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* unimplemented calls a system call the simulated kernel lacks: the
 * program must stop there, never see an errno the real kernel would not
 * give. */
static int unimplemented(void) {
	printf("before\n");
	fflush(stdout);
	long r = syscall(SYS_socket, 2, 1, 0);
	printf("socket %ld %d\n", r, errno);
	return 0;
}

/* futexes exercises futex(2)'s answers that need no second thread, the
 * signal mask and pending set, and tgkill; its output must be qemu-alpha's. */
static int futexes(void) {
	static unsigned int w[4] __attribute__((aligned(8))) = {5, 0, 7, 0};
	struct timespec ms = {0, 1000000};
	errno = 0;
	long r = syscall(SYS_futex, &w[0], 0 /* WAIT */, 4, NULL, NULL, 0);
	printf("wait changed %ld %d\n", r, errno);
	errno = 0;
	r = syscall(SYS_futex, &w[0], 128 /* WAIT|PRIVATE */, 5, &ms, NULL, 0);
	printf("wait timeout %ld %d\n", r, errno);
	errno = 0;
	r = syscall(SYS_futex, (char *)&w[0] + 1, 1 /* WAKE */, 1, NULL, NULL, 0);
	printf("misaligned %ld %d\n", r, errno);
	printf("wake none %ld\n", syscall(SYS_futex, &w[0], 129, 1, NULL, NULL, 0));
	errno = 0;
	r = syscall(SYS_futex, &w[0], 4 /* CMP_REQUEUE */, 1, 1, &w[2], 6);
	printf("cmp_requeue changed %ld %d\n", r, errno);
	printf("cmp_requeue %ld\n", syscall(SYS_futex, &w[0], 4, 1, 1, &w[2], 5));
	/* WAKE_OP: *w[2] += 3, wake on w[0], and on w[2] if old == 7 */
	unsigned int op = (1u << 28) | (0u << 24) | (3u << 12) | 7u;
	printf("wake_op %ld w2 %u\n", syscall(SYS_futex, &w[0], 5, 1, 1, &w[2], op), w[2]);
	errno = 0;
	r = syscall(SYS_futex, &w[0], 9 /* WAIT_BITSET */, 5, NULL, NULL, 0);
	printf("bitset zero %ld %d\n", r, errno);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	errno = 0;
	r = syscall(SYS_futex, &w[0], 9, 5, &now, NULL, ~0u);
	printf("bitset past %ld %d\n", r, errno);

	printf("tid is pid %d\n", (int)syscall(SYS_gettid) == (int)getpid());
	errno = 0;
	r = syscall(SYS_tgkill, getpid(), (int)syscall(SYS_gettid), 0);
	printf("tgkill 0 %ld %d\n", r, errno);
	errno = 0;
	r = syscall(SYS_tgkill, getpid(), 999999, SIGUSR1);
	printf("tgkill none %ld %d\n", r, errno);

	sigset_t s, old, pend;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, &old);
	printf("blocked before %d\n", sigismember(&old, SIGUSR1));
	raise(SIGUSR1);
	sigpending(&pend);
	printf("pending %d\n", sigismember(&pend, SIGUSR1));
	signal(SIGUSR2, SIG_IGN);
	raise(SIGUSR2);
	printf("ignored\n");
	fflush(stdout);
	sigprocmask(SIG_UNBLOCK, &s, NULL); /* SIGUSR1's default action ends us */
	printf("not reached\n");
	return 0;
}

/* leaderexit: the main thread leaves with pthread_exit while a worker
 * runs on; the worker's end (the last thread's) ends the process with 0. */
static void *late_worker(void *arg) {
	struct timespec d = {0, 2000000};
	nanosleep(&d, 0);
	printf("worker %s after the main thread, tid differs %d\n", (char *)arg,
	       (int)syscall(SYS_gettid) != (int)getpid());
	return 0;
}

static int leaderexit(void) {
	pthread_t t;
	printf("main starts a worker\n");
	fflush(stdout);
	if (pthread_create(&t, 0, late_worker, "runs") != 0)
		return 1;
	pthread_exit(0);
}

static int syscalls(void) {
	struct utsname u;
	uname(&u);
	printf("uname %s %s %s\n", u.sysname, u.nodename, u.machine);
	printf("pid %d ppid %d\n", (int)getpid(), (int)getppid());

	size_t n = 3 << 20;
	unsigned char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) { printf("mmap failed %d\n", errno); return 1; }
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i += 4096) { p[i] = (unsigned char)(i >> 12); sum += p[i]; }
	printf("mmap ok sum %lu zero %d\n", (unsigned long)sum, p[1]);
	printf("munmap %d\n", munmap(p, n));

	void *b0 = sbrk(0);
	void *b1 = sbrk(1 << 20);
	memset(b1, 7, 1 << 20);
	printf("sbrk grew %ld\n", (long)((char *)sbrk(0) - (char *)b0));

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	volatile long x = 0;
	for (int i = 0; i < 100000; i++) x += i;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
	printf("clock advances %d\n", ns > 0);
	struct timespec d = {0, 5000000};
	nanosleep(&d, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ns = (t0.tv_sec - t1.tv_sec) * 1000000000L + (t0.tv_nsec - t1.tv_nsec);
	printf("slept at least 5ms %d\n", ns >= 5000000);

	errno = 0;
	printf("read stdout fails %zd %d\n", read(1, &x, 1), errno);
	printf("badfd %zd %d\n", write(42, "x", 1), errno);
	return 0;
}

static int forkwait(void) {
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) { printf("child running\n"); fflush(stdout); _exit(7); }
	int st = 0;
	pid_t w = waitpid(c, &st, 0);
	printf("waited same %d exited %d status %d\n", w == c, WIFEXITED(st), WEXITSTATUS(st));
	errno = 0;
	printf("no children %d %d\n", (int)waitpid(-1, &st, 0), errno);
	return 0;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "syscalls";
	if (!strcmp(mode, "unimplemented")) return unimplemented();
	if (!strcmp(mode, "futex")) return futexes();
	if (!strcmp(mode, "leaderexit")) return leaderexit();
	if (!strcmp(mode, "syscalls")) return syscalls();
	if (!strcmp(mode, "fork")) return forkwait();
	if (!strcmp(mode, "segv")) { volatile int *p = (int *)16; return *p; }
	if (!strcmp(mode, "divzero")) { volatile long a = 1, b = 0; return (int)(a / b); }
	if (!strcmp(mode, "abort")) abort();
	if (!strcmp(mode, "exit")) return atoi(argv[2]);
	fprintf(stderr, "sysprobe: unknown mode %s\n", mode);
	return 2;
}
