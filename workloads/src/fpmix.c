/*
 * fpmix - floating point of several kinds, for the FP pipes and for a
 * simulator's FP unit: a single-precision Mandelbrot set (adds, muls, muls,
 * compares in the FA/FM pipes), square roots by our own Newton iteration
 * (divt: the unpipelined divider) and by libm, single and double
 * division, and conversions between integers and floating point in both
 * directions, signed and unsigned (cvtqt, cvttq/c, cvtqs, and gcc's sequences
 * for unsigned 64-bit values with the top bit set).
 *
 * usage: fpmix [scale]   (default 1; work grows linearly)
 *
 * Every value stays in the normal range (no denormals, infinities or NaNs:
 * without -mieee an EV5 traps on those), so results are IEEE-exact on any
 * machine; libm's sqrt is correctly rounded.
 */
#include <math.h>
#include <string.h>

#include "wl.h"

static uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

/* mandel counts escape iterations over a w x h grid of [-2,1] x [-1.25,1.25]
 * in single precision. */
WL_NOINLINE
static uint64_t mandel(int w, int hgt, int maxit, uint64_t *inside,
		       uint64_t *h)
{
	uint64_t total = 0;
	*inside = 0;
	for (int y = 0; y < hgt; y++) {
		float ci = -1.25f + 2.5f * (float)y / (float)hgt;
		for (int x = 0; x < w; x++) {
			float cr = -2.0f + 3.0f * (float)x / (float)w;
			float zr = 0, zi = 0;
			int it = 0;
			while (it < maxit) {
				float zr2 = zr * zr, zi2 = zi * zi;
				if (zr2 + zi2 > 4.0f)
					break;
				zi = 2.0f * zr * zi + ci;
				zr = zr2 - zi2 + cr;
				it++;
			}
			total += (uint64_t)it;
			if (it == maxit) {
				(*inside)++;
				*h = wl_mix(*h, float_bits(zr) ^
						    ((uint64_t)float_bits(zi) << 32));
			}
		}
	}
	return total;
}

/* newton_sqrt: x_{k+1} = (x_k + a/x_k) / 2 from a power-of-two guess,
 * for a >= 1, until the iterate stops decreasing. */
WL_NOINLINE
static double newton_sqrt(double a)
{
	double x = 1;
	while (x * x < a)
		x *= 2;
	for (;;) {
		double nx = 0.5 * (x + a / x);
		if (nx >= x)
			return x;
		x = nx;
	}
}

int main(int argc, char **argv)
{
	uint64_t scale = wl_arg(argc, argv, 1, 1, 1000);
	uint64_t h = WL_SEED0;

	/* 1. Mandelbrot, single precision. */
	uint64_t inside;
	int w = 96, hgt = (int)(48 * scale);
	uint64_t iters = mandel(w, hgt, 64, &inside, &h);
	printf("fpmix: scale %" PRIu64 "\n", scale);
	printf("mandel %dx%d: %" PRIu64 " iterations, %" PRIu64 " inside\n", w,
	       hgt, iters, inside);
	h = wl_mix(h, iters);

	/* 2. Square roots by Newton; every tenth also by libm, whose EV5
	 * sqrt (no sqrtt before EV6) saves and restores the FP control word
	 * with three system calls (osf_getsysinfo, osf_setsysinfo x2). */
	uint64_t nsq = 20000 * scale, differ = 0, nlibm = 0;
	double sroot = 0;
	for (uint64_t i = 1; i <= nsq; i++) {
		double a = (double)i * 1.5 + 0.25;
		double s2 = newton_sqrt(a);
		sroot += s2;
		h = wl_mix(h, double_bits(s2));
		if (i % 10 == 0) {
			double s1 = sqrt(a);
			nlibm++;
			differ += double_bits(s1) != double_bits(s2);
			h = wl_mix(h, double_bits(s1));
		}
	}
	printf("sqrt: %" PRIu64 " roots, sum %.6f; libm for %" PRIu64
	       ", newton differs in %" PRIu64 "\n", nsq, sroot,
	       nlibm, differ);
	h = wl_mix(h, differ);

	/* 3. Division and harmonic sums, single and double. */
	uint64_t nh = 50000 * scale;
	float hs = 0;
	double hd = 0;
	for (uint64_t i = 1; i <= nh; i++) {
		hs += 1.0f / (float)i;
		hd += 1.0 / (double)i;
	}
	printf("harmonic(%" PRIu64 "): float %.5f double %.9f\n", nh, (double)hs,
	       hd);
	h = wl_mix(h, float_bits(hs));
	h = wl_mix(h, double_bits(hd));

	/* 4. Conversions. */
	int64_t back = 0;
	uint64_t ubig = 0;
	float fsum = 0;
	uint64_t nconv = 40000 * scale;
	for (uint64_t i = 0; i < nconv; i++) {
		int64_t v = (int64_t)(i * 2654435761u % 2000003) - 1000001;
		double d = (double)v * 1.37;	    /* cvtqt, mult */
		back += (int64_t)d;		    /* cvttq/c: truncate */
		back += (int64_t)(float)v / 3;	    /* cvtqs, then back */
		fsum += (float)(int32_t)(v >> 8);   /* int -> float */
		uint64_t u = 0x8000000000000000ULL + i * 0x9e3779b97f4aULL;
		double du = (double)u;		    /* unsigned, top bit set */
		ubig ^= (uint64_t)(du * 0.75);	    /* double -> unsigned */
		ubig += (uint64_t)(uint32_t)((double)(uint32_t)u * 0.5);
	}
	printf("conversions: %" PRIu64 ", back %" PRId64 ", float sum %.1f,"
	       " unsigned mix %016" PRIx64 "\n", nconv, back, (double)fsum, ubig);
	h = wl_mix(h, (uint64_t)back);
	h = wl_mix(h, float_bits(fsum));
	h = wl_mix(h, ubig);

	wl_checksum("fpmix", h);
	return 0;
}
