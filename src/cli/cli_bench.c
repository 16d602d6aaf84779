/*
 * cli_bench.c: `aimsweep bench`: SGD steps per second for each decomposition and d, against the
 * memory bandwidth this machine shows at the same working-set size.
 *
 * A step reads and writes the student's parameters once (the fused pass in sgd.c) and reads
 * the teacher's factor once (the teacher's index of the next sample), so it moves
 *   direct: 16 d^2 + 8 d k,  tied: 16 d r + 8 d k,  untied: 32 d r + 8 d k  bytes
 * (k = rank of the teacher factor). The bandwidth is measured by a kernel that moves exactly
 * these bytes (one read-modify-write stream over a buffer the size of the parameters, one read
 * stream over a buffer the size of the factor); the roofline time of a step is its bytes over
 * that bandwidth. Steps and bandwidth alternate, best of several rounds each.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aimsweep/base/clock.h"
#include "aimsweep/cli/cli.h"
#include "aimsweep/model/kern.h"
#include "aimsweep/model/model.h"
#include "aimsweep/solvers/sgd.h"

#define BENCH_SECONDS 1.0
#define BENCH_BW_REPS 3
#define BENCH_ROUNDS 5

/* Bytes/s of one read-modify-write pass over rw doubles plus one read pass over ro doubles,
 * both 64-byte aligned like the step's arrays. The read pass keeps 32 partial sums (eight
 * vectors), so that it is bound by the loads and not by the latency of the additions. */
#define BENCH_PARTIALS 32
static double bandwidth(size_t rw, size_t ro, double seconds)
{
    double *a = NULL, *b = NULL;
    if (posix_memalign((void **)&a, 64, sizeof(double) * rw) ||
        posix_memalign((void **)&b, 64, sizeof(double) * (ro + BENCH_PARTIALS))) {
        free(a);
        return NAN;
    }
    for (size_t i = 0; i < rw; i++)
        a[i] = 1.0 / (double)(i + 1);
    for (size_t i = 0; i < ro + BENCH_PARTIALS; i++)
        b[i] = i < ro ? 1.0 / (double)(i + 2) : 0.0;
    volatile double sink = 0;
    double best = 0, bytes = 16.0 * (double)rw + 8.0 * (double)ro;
    long reps = 1;
    for (int rep = 0; rep < BENCH_BW_REPS; rep++) {
        double t0 = clock_now_s(), t;
        for (long k = 0; k < reps; k++) {
            double s[BENCH_PARTIALS] = {0}, al = 1.0 - 1e-9 * (double)(k & 1);
#pragma omp simd
            for (size_t i = 0; i < rw; i++)
                a[i] = al * a[i] + 1e-12;
            for (size_t i = 0; i < ro; i += BENCH_PARTIALS)
                for (int q = 0; q < BENCH_PARTIALS; q++)
                    s[q] += b[i + q];
            for (int q = 1; q < BENCH_PARTIALS; q++)
                s[0] += s[q];
            sink += s[0] + a[k % rw];
        }
        t = clock_now_s() - t0;
        if (t < seconds / BENCH_BW_REPS) {
            reps *= 2;
            rep--;
            continue;
        }
        double bw = bytes * (double)reps / t;
        best = bw > best ? bw : best;
    }
    (void)sink;
    free(a);
    free(b);
    return best;
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t && n < max; t = strtok(NULL, ",")) {
        char *end;
        long v = strtol(t, &end, 10);
        if (*end || v < 2 || v > 20000)
            return -1;
        out[n++] = (int)v;
    }
    return n;
}

int cli_bench(int argc, char **argv)
{
    int ds[16] = {100, 400, 800}, nd = 3, csv = 0;
    double seconds = BENCH_SECONDS;
    unsigned decomps = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            printf("usage: aimsweep bench [--d 100,400,800] [--decomposition direct,tied,untied] [--seconds S] [--format table|csv]\n"
                   "SGD steps per second (T = 2, r = d, h1, wishart(0.5) teacher) against the memory\n"
                   "bandwidth measured at the same working-set size.\n");
            return 0;
        } else if (!strcmp(a, "--d") && v) {
            if ((nd = parse_list(v, ds, 16)) <= 0) {
                fprintf(stderr, "aimsweep bench: --d takes a list of sizes like 100,400\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--decomposition") && v) {
            decomps = 0;
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
                decomps |= !strcmp(t, "direct") ? 1u : !strcmp(t, "tied") ? 2u : !strcmp(t, "untied") ? 4u : 8u;
            if (decomps & 8u)
                decomps = 0;
            if (!decomps) {
                fprintf(stderr, "aimsweep bench: --decomposition takes direct,tied,untied\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            char *end;
            seconds = strtod(v, &end);
            if (end == v || *end || !(seconds > 0) || !isfinite(seconds)) {
                fprintf(stderr, "aimsweep bench: --seconds takes a number of seconds > 0, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--format") && v) {
            csv = !strcmp(v, "csv");
            i++;
        } else {
            fprintf(stderr, "aimsweep bench: unknown or incomplete option '%s'\n", a);
            return 2;
        }
    }
    if (csv)
        printf("decomposition,d,steps_per_s,us_per_step,bytes_per_step,bandwidth_gbs,roofline_us,ratio_to_roofline\n");
    else
        printf("SGD kernels: %s\n%-7s %5s %12s %10s %12s %10s %11s %8s\n",
               kern_vector() ? "AVX2/FMA" : "portable loops (built without AVX2/FMA)", "decomp", "d", "steps/s", "us/step", "bytes/step",
               "BW GB/s", "roofline us", "ratio");
    const char *names[] = {"direct", "tied", "untied"};
    for (int di = 0; di < 3; di++) {
        if (!(decomps & (1u << di)))
            continue;
        for (int k = 0; k < nd; k++) {
            struct params p;
            char err[256];
            params_default(&p);
            params_set(&p, "decomposition", names[di], err, sizeof err);
            p.d = ds[k];
            p.lr = 0.01;
            struct model *m = model_create(&p);
            struct sgd_state *st = m ? sgd_state_create(m) : NULL;
            if (!st) {
                fprintf(stderr, "aimsweep bench: out of memory at d = %d\n", ds[k]);
                model_destroy(&m);
                return 1;
            }
            size_t par = di == 0 ? (size_t)m->d * m->d : (size_t)m->d * m->r * (di == 2 ? 2 : 1);
            size_t fac = (size_t)m->d * m->tk;
            /* Steps and bandwidth are measured in alternation, best of BENCH_ROUNDS each, so
             * that both see the same machine (it may be shared and noisy). */
            sgd_steps(st, 10);
            long n = 16;
            double t = 0, best_us = INFINITY, bw = 0, slice = seconds / BENCH_ROUNDS;
            for (;;) {
                double t0 = clock_now_s();
                sgd_steps(st, n);
                t = clock_now_s() - t0;
                if (t >= slice)
                    break;
                n = (long)((double)n * (t > 0 ? fmin(8.0, 1.2 * slice / t) : 8.0)) + 1;
            }
            for (int round = 0; round < BENCH_ROUNDS; round++) {
                double t0 = clock_now_s();
                sgd_steps(st, n);
                t = clock_now_s() - t0;
                best_us = fmin(best_us, 1e6 * t / (double)n);
                bw = fmax(bw, bandwidth(par, fac, slice));
            }
            double bytes = 16.0 * (double)par + 8.0 * (double)fac;
            double us = best_us, roof = 1e6 * bytes / bw;
            if (csv)
                printf("%s,%d,%.1f,%.3f,%.0f,%.2f,%.3f,%.3f\n", names[di], m->d, 1e6 / us, us, bytes, bw / 1e9, roof, us / roof);
            else
                printf("%-7s %5d %12.1f %10.2f %12.0f %10.2f %11.2f %8.2f\n", names[di], m->d, 1e6 / us, us, bytes, bw / 1e9,
                       roof, us / roof);
            fflush(stdout);
            sgd_state_destroy(&st);
            model_destroy(&m);
        }
    }
    return 0;
}
