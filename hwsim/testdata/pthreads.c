/* pthreads: a static threaded program for the simulated kernel's threads.
 * Worker threads do per-thread libm work, bump a mutex-protected shared
 * counter and an atomic one (ldq_l/stq_c), meet at a barrier, and hand
 * results to the main thread through a condition variable; two rounds, so
 * glibc reuses the stacks of joined threads. Every line it prints is the
 * same whatever the interleaving, so its output must equal qemu-alpha's.
 *
 * usage: pthreads [threads [n]]   (defaults 4, 20000) */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXT 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static long counter;       /* under lock */
static long atomic_count;  /* __atomic only */
static int done;           /* under lock: workers past the barrier */
static int release_round;  /* under lock: main lets workers finish */
static double partial[MAXT];
static __thread long tls_ops;

struct arg {
	int id, nthreads, round;
	long n;
};

static void *worker(void *p) {
	struct arg *a = p;
	double s = 0;
	for (long i = a->id; i < a->n; i += a->nthreads) {
		s += sqrt((double)i) * sin((double)i * 0.001) + log1p((double)i);
		tls_ops++;
	}
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&lock);
		counter += a->id + 1;
		pthread_mutex_unlock(&lock);
		__atomic_fetch_add(&atomic_count, 1, __ATOMIC_SEQ_CST);
		tls_ops++;
	}
	partial[a->id] = s;
	pthread_barrier_wait(&barrier);

	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_broadcast(&cond);
	while (release_round < a->round)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return (void *)tls_ops;
}

int main(int argc, char **argv) {
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	long n = argc > 2 ? atol(argv[2]) : 20000;
	if (nt < 1 || nt > MAXT)
		nt = 4;
	pthread_t th[MAXT];
	struct arg args[MAXT];
	for (int round = 1; round <= 2; round++) {
		pthread_barrier_init(&barrier, NULL, nt);
		done = 0;
		for (int i = 0; i < nt; i++) {
			args[i] = (struct arg){i, nt, round, n * round};
			if (pthread_create(&th[i], NULL, worker, &args[i]) != 0) {
				printf("pthread_create failed\n");
				return 1;
			}
		}
		pthread_mutex_lock(&lock);
		while (done < nt)
			pthread_cond_wait(&cond, &lock);
		release_round = round;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		long ops = 0;
		for (int i = 0; i < nt; i++) {
			void *r;
			pthread_join(th[i], &r);
			ops += (long)r;
		}
		pthread_barrier_destroy(&barrier);
		double total = 0;
		for (int i = 0; i < nt; i++) {
			printf("round %d thread %d partial %.6f\n", round, i, partial[i]);
			total += partial[i];
		}
		printf("round %d: threads %d total %.6f counter %ld atomic %ld ops %ld\n",
		       round, nt, total, counter, atomic_count, ops);
	}
	return 0;
}
