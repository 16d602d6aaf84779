/*
 * cli_bench.c: `aimsweep bench`: SGD steps per second for each decomposition and d, against the
 * memory bandwidth this machine shows at the same working-set size.
 *
 * A step reads and writes the student's parameters once (the fused pass in sgd.c) and reads
 * the teacher's factor once (the teacher's index of the next sample), so it moves
 *   direct: 16 E + 8 d k,  tied: 16 d r + 8 d k,  untied: 32 d r + 8 d k  bytes
 * (k = rank of the teacher factor; E = d^2, or d^2/2 + 16 d where direct keeps half of S,
 * sgd_sym.c: sgd_entries_per_pass) in double precision, and half that in single (4-byte
 * entries); where the step draws its samples ahead and projects the factor for several at once
 * (sgd_samples_per_factor_read), the factor's term is divided by their number, and where one
 * pass over the parameters makes two steps (sgd_steps_per_pass) so is theirs. The bandwidth is
 * measured by a kernel that moves exactly these bytes (one read-modify-write stream over a
 * buffer the size of the parameters, one read stream over a buffer the size of the factor, in
 * the step's element type); the memory time of a step is its bytes over that bandwidth. A step
 * also makes 2T multiply-adds per parameter entry (T for the correction, T for the projections
 * of the next sample) and T per entry of the teacher's factor:
 *   direct: 4 E + 2 d k,  tied: 4 d r + 2 d k,  untied: 8 d r + 2 d k  (T = 2)
 * in either precision; the compute time of a step is that count over the multiply-add rate this
 * machine shows in the widest vectors of the build (kern_fma_burst, independent chains, the
 * step's element type). The roofline time is the larger of the two (a step can be no faster than
 * its bytes allow, nor than its arithmetic), and the ratio of the step's time to it is how far
 * the step is from what this machine can do. Steps, bandwidth and the multiply-add rate
 * alternate, each the best over many chunks of about 2 ms (BENCH_CHUNK_S), so that a shared
 * machine's neighbours weigh as little as they can.
 *
 * `aimsweep bench --loads` (bench_loads) measures the machine alone: the multiply-add rate of the
 * compute roof when some of its chains load their addend from the first-level cache, as the
 * step's kernels load their rows and tokens.
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
#define BENCH_ROUNDS 5
/* Each timing is the best over chunks of about BENCH_CHUNK_S: on a shared machine a chunk
 * shorter than the scheduler's time slice often runs uninterrupted, and the best of many such
 * chunks is the machine's own speed, where a long timed run measures the neighbours too. */
#define BENCH_CHUNK_S 2e-3

/* The reference passes: one read-modify-write pass over rw entries plus one read pass over ro
 * entries, doubles or floats, 64-byte aligned like the step's arrays. The read pass keeps
 * eight vectors of partial sums, so that it is bound by the loads and not by the latency of the
 * additions. The buffers are as large as the step's, so that the pass sees the same level of
 * the memory hierarchy (cache or DRAM). */
#define BENCH_PARTIALS 32     /* doubles: eight vectors of four */
#define BENCH_PARTIALS_F32 64 /* floats: eight vectors of eight */
struct bw_buf {
    int single;
    size_t rw, ro;
    double *a, *b;
    float *af, *bf;
};

static int bw_init(struct bw_buf *w, size_t rw, size_t ro, int single)
{
    memset(w, 0, sizeof *w);
    w->single = single;
    w->rw = rw;
    w->ro = ro;
    if (single) {
        if (posix_memalign((void **)&w->af, 64, sizeof(float) * rw) ||
            posix_memalign((void **)&w->bf, 64, sizeof(float) * (ro + BENCH_PARTIALS_F32)))
            return -1;
        for (size_t i = 0; i < rw; i++)
            w->af[i] = 1.0f / (float)(i + 1);
        for (size_t i = 0; i < ro + BENCH_PARTIALS_F32; i++)
            w->bf[i] = i < ro ? 1.0f / (float)(i + 2) : 0.0f;
    } else {
        if (posix_memalign((void **)&w->a, 64, sizeof(double) * rw) ||
            posix_memalign((void **)&w->b, 64, sizeof(double) * (ro + BENCH_PARTIALS)))
            return -1;
        for (size_t i = 0; i < rw; i++)
            w->a[i] = 1.0 / (double)(i + 1);
        for (size_t i = 0; i < ro + BENCH_PARTIALS; i++)
            w->b[i] = i < ro ? 1.0 / (double)(i + 2) : 0.0;
    }
    return 0;
}

static void bw_free(struct bw_buf *w)
{
    free(w->a);
    free(w->b);
    free(w->af);
    free(w->bf);
    memset(w, 0, sizeof *w);
}

static double bw_bytes(const struct bw_buf *w)
{
    double el = w->single ? 4.0 : 8.0;
    return 2 * el * (double)w->rw + el * (double)w->ro;
}

/* reps passes; returns a value that depends on every entry read (kept by the caller). */
static double bw_passes(struct bw_buf *w, long reps)
{
    double sink = 0;
    for (long k = 0; k < reps; k++) {
        if (w->single) {
            float s[BENCH_PARTIALS_F32] = {0}, al = 1.0f - 1e-6f * (float)(k & 1);
            float *a = w->af;
            const float *b = w->bf;
#pragma omp simd
            for (size_t i = 0; i < w->rw; i++)
                a[i] = al * a[i] + 1e-12f;
            for (size_t i = 0; i < w->ro; i += BENCH_PARTIALS_F32)
                for (int q = 0; q < BENCH_PARTIALS_F32; q++)
                    s[q] += b[i + q];
            for (int q = 1; q < BENCH_PARTIALS_F32; q++)
                s[0] += s[q];
            sink += s[0] + a[(size_t)k % w->rw];
        } else {
            double s[BENCH_PARTIALS] = {0}, al = 1.0 - 1e-9 * (double)(k & 1);
            double *a = w->a;
            const double *b = w->b;
#pragma omp simd
            for (size_t i = 0; i < w->rw; i++)
                a[i] = al * a[i] + 1e-12;
            for (size_t i = 0; i < w->ro; i += BENCH_PARTIALS)
                for (int q = 0; q < BENCH_PARTIALS; q++)
                    s[q] += b[i + q];
            for (int q = 1; q < BENCH_PARTIALS; q++)
                s[0] += s[q];
            sink += s[0] + a[(size_t)k % w->rw];
        }
    }
    return sink;
}

/* The best bytes/s of the reference passes over chunks of about BENCH_CHUNK_S for `seconds`. */
static double bandwidth(struct bw_buf *w, double seconds)
{
    volatile double sink = 0;
    long reps = 1;
    double t;
    for (;;) { /* reps per chunk */
        double t0 = clock_now_s();
        sink += bw_passes(w, reps);
        t = clock_now_s() - t0;
        if (t >= BENCH_CHUNK_S)
            break;
        reps = (long)((double)reps * (t > 0 ? fmin(8.0, 1.2 * BENCH_CHUNK_S / t) : 8.0)) + 1;
    }
    double best = t, end = clock_now_s() + seconds;
    while (clock_now_s() < end) {
        double t0 = clock_now_s();
        sink += bw_passes(w, reps);
        best = fmin(best, clock_now_s() - t0);
    }
    (void)sink;
    return bw_bytes(w) * (double)reps / best;
}

/* The best scalar multiply-adds per second of kern_fma_loads (`loads` of its chains adding a
 * loaded vector, and with `stores` 2 two stores and two lines asked for ahead a round; 0 and 0
 * is kern_fma_burst) in the step's element type over chunks of about BENCH_CHUNK_S for
 * `seconds`. */
static double fma_rate_loads(int single, int loads, int stores, double seconds)
{
    volatile double sink = 0;
    double fmas = 0, best = INFINITY, end = clock_now_s() + seconds;
    /* rounds per chunk: 16 vector multiply-adds each (12 with AVX2), about 2 ms at 5e8/s */
    long n = 1 << 16;
    do {
        double t0 = clock_now_s();
        sink += kern_fma_loads(single, loads, stores, n, &fmas);
        best = fmin(best, clock_now_s() - t0);
    } while (clock_now_s() < end);
    (void)sink;
    return fmas / best;
}

static double fma_rate(int single, double seconds) { return fma_rate_loads(single, 0, 0, seconds); }

/* `aimsweep bench --loads`: the multiply-add rate of the compute roof's chains (16, or 12 with
 * AVX2) when L of them add a vector loaded from the first-level cache, L = 0, 2, ..., all, in
 * double and float, each against L = 0 (the compute roof of the steps' table); and the same with
 * two stores and two lines asked for ahead a round, as the float two-step pass makes (ten loads,
 * two stores and two prefetches a round of sixteen multiply-adds). What these cost the
 * multiply-add units is a property of the machine. */
static int bench_loads(int csv, double seconds)
{
    enum { NLMAX = 9 };
    int chains = kern_fma_chains(), nl = chains / 2 + 1;
    double rate[2][2][NLMAX] = {{{0}}}, slice = seconds / BENCH_ROUNDS / (4 * nl);
    for (int round = 0; round < BENCH_ROUNDS; round++)
        for (int st = 0; st < 2; st++)
            for (int single = 0; single < 2; single++)
                for (int l = 0; l < nl; l++)
                    rate[st][single][l] =
                        fmax(rate[st][single][l], fma_rate_loads(single, 2 * l, 2 * st, slice));
    if (csv)
        printf("precision,chains,loads,stores,gfma_per_s,ratio_to_no_loads\n");
    else
        printf(
            "multiply-adds a second, %d chains a round, L of them adding a vector loaded from the\n"
            "first-level cache, without stores and with two stores and two lines asked for ahead\n"
            "a round (%s); each ratio against L = 0 without stores\n"
            "%5s %12s %6s %12s %6s %16s %6s %16s %6s\n",
            chains,
            kern_vector() == 2 ? "AVX-512"
            : kern_vector()    ? "AVX2/FMA"
                               : "portable loops",
            "L", "double G/s", "ratio", "float G/s", "ratio", "double+st G/s", "ratio",
            "float+st G/s", "ratio");
    for (int l = 0; l < nl; l++) {
        if (csv)
            for (int st = 0; st < 2; st++)
                for (int single = 0; single < 2; single++)
                    printf("%s,%d,%d,%d,%.6g,%.4g\n", single ? "single" : "double", chains, 2 * l,
                           2 * st, rate[st][single][l] / 1e9,
                           rate[st][single][l] / rate[0][single][0]);
        else
            printf("%5d %12.1f %6.2f %12.1f %6.2f %16.1f %6.2f %16.1f %6.2f\n", 2 * l,
                   rate[0][0][l] / 1e9, rate[0][0][l] / rate[0][0][0], rate[0][1][l] / 1e9,
                   rate[0][1][l] / rate[0][1][0], rate[1][0][l] / 1e9,
                   rate[1][0][l] / rate[0][0][0], rate[1][1][l] / 1e9,
                   rate[1][1][l] / rate[0][1][0]);
    }
    return 0;
}

/* The best time per step in microseconds over chunks of n steps for `seconds`. */
static double step_us(struct sgd_state *st, long n, double seconds)
{
    double best = INFINITY, end = clock_now_s() + seconds;
    do {
        double t0 = clock_now_s();
        sgd_steps(st, n);
        best = fmin(best, (clock_now_s() - t0) / (double)n);
    } while (clock_now_s() < end);
    return 1e6 * best;
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
    int ds[16] = {100, 400, 800}, nd = 3, csv = 0, loads = 0, steps_options = 0, half = 1;
    double seconds = BENCH_SECONDS;
    unsigned decomps = 7, precisions = 1; /* bit 0 double, bit 1 single */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(
                "usage: aimsweep bench [--d 100,400,800] [--decomposition direct,tied,untied] [--precision double,single]\n"
                "                      [--half on|off] [--seconds S] [--format table|csv]\n"
                "       aimsweep bench --loads [--seconds S] [--format table|csv]\n"
                "SGD steps per second (T = 2, r = d, h1, wishart(0.5) teacher) against the roofline:\n"
                "the larger of the step's bytes over the memory bandwidth measured at the same\n"
                "working-set size and its multiply-adds over the machine's measured multiply-add rate.\n"
                "--loads: that multiply-add rate when L of its chains a round add a vector loaded\n"
                "from the first-level cache (L = 0, 2, ..., all), without and with two stores a\n"
                "round, as the step's kernels load and store.\n"
                "--half off: direct keeps the whole of its symmetric S, as with softmax, instead of\n"
                "half of it (the default where the two-step pass runs: half the work of a step).\n");
            return 0;
        } else if (!strcmp(a, "--loads")) {
            loads = 1;
        } else if (!strcmp(a, "--d") && v) {
            steps_options = 1;
            if ((nd = parse_list(v, ds, 16)) <= 0) {
                fprintf(stderr, "aimsweep bench: --d takes a list of sizes like 100,400\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--decomposition") && v) {
            steps_options = 1;
            decomps = 0;
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
                decomps |= !strcmp(t, "direct")   ? 1u
                           : !strcmp(t, "tied")   ? 2u
                           : !strcmp(t, "untied") ? 4u
                                                  : 8u;
            if (decomps & 8u)
                decomps = 0;
            if (!decomps) {
                fprintf(stderr, "aimsweep bench: --decomposition takes direct,tied,untied\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--precision") && v) {
            steps_options = 1;
            precisions = 0;
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
                precisions |= !strcmp(t, "double") ? 1u : !strcmp(t, "single") ? 2u : 4u;
            if (!precisions || (precisions & 4u)) {
                fprintf(stderr,
                        "aimsweep bench: --precision takes double, single or double,single\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--half") && v) {
            steps_options = 1;
            if (strcmp(v, "on") && strcmp(v, "off")) {
                fprintf(stderr, "aimsweep bench: --half takes on or off, not '%s'\n", v);
                return 2;
            }
            half = !strcmp(v, "on");
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            char *end;
            seconds = strtod(v, &end);
            if (end == v || *end || !(seconds > 0) || !isfinite(seconds)) {
                fprintf(stderr,
                        "aimsweep bench: --seconds takes a number of seconds > 0, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--format") && v) {
            if (strcmp(v, "csv") && strcmp(v, "table")) {
                fprintf(stderr, "aimsweep bench: --format takes table or csv, not '%s'\n", v);
                return 2;
            }
            csv = !strcmp(v, "csv");
            i++;
        } else {
            fprintf(stderr, "aimsweep bench: unknown or incomplete option '%s'\n", a);
            return 2;
        }
    }
    if (loads && steps_options) {
        fprintf(stderr,
                "aimsweep bench: --loads measures the machine alone and takes only "
                "--seconds and --format, not --d, --decomposition, --precision or --half\n");
        return 2;
    }
    if (loads)
        return bench_loads(csv, seconds);
    if (csv)
        printf(
            "decomposition,d,precision,steps_per_s,us_per_step,bytes_per_step,bandwidth_gbs,memory_us,"
            "fma_per_step,gfma_per_s,compute_us,roofline_us,ratio_to_roofline,param_entries,"
            "kernels\n");
    else
        printf("kernels: %s (%s)\n%-7s %5s %-6s %10s %8s %10s %8s %8s %9s %8s %8s %6s\n",
               kern_path(),
               kern_vector() == 2 ? "AVX-512 for T = 2, AVX2/FMA otherwise"
               : kern_vector()    ? "AVX2/FMA for T = 2, portable loops otherwise"
                                  : "portable loops",
               "decomp", "d", "prec", "steps/s", "us/step", "bytes/step", "BW GB/s", "mem us",
               "FMA/step", "GFMA/s", "comp us", "ratio");
    const char *names[] = {"direct", "tied", "untied"};
    for (int di = 0; di < 3; di++) {
        if (!(decomps & (1u << di)))
            continue;
        for (int k = 0; k < nd; k++) {
            /* one model for both precisions (the teacher and the initial student do not depend on
         * it; drawing them is most of the set-up time at large d) */
            struct model *m = NULL;
            for (int single = 0; single < 2; single++) {
                if (!(precisions & (1u << single)))
                    continue;
                struct params p;
                char err[256];
                params_default(&p);
                params_set(&p, "decomposition", names[di], err, sizeof err);
                p.d = ds[k];
                p.lr = 0.01;
                if (!m)
                    m = model_create(&p);
                if (m)
                    m->p.precision = single ? PRECISION_SINGLE : PRECISION_DOUBLE;
                struct sgd_state *st = m ? sgd_state_create(m) : NULL;
                if (!st) {
                    fprintf(stderr, "aimsweep bench: out of memory at d = %d\n", ds[k]);
                    model_destroy(&m);
                    return 1;
                }
                if (!half)
                    sgd_set_symmetric(st, 0);
                size_t par = sgd_entries_per_pass(st);
                /* the factor's entries a step reads: all of it, or once for several samples */
                size_t fac = (size_t)m->d * m->tk / (size_t)sgd_samples_per_factor_read(st);
                /* Steps and bandwidth are measured in alternation, best of BENCH_ROUNDS each, so
             * that both see the same machine (it may be shared and noisy). */
                struct bw_buf w;
                if (bw_init(&w, par, fac, single)) {
                    fprintf(stderr, "aimsweep bench: out of memory at d = %d\n", ds[k]);
                    bw_free(&w);
                    sgd_state_destroy(&st);
                    model_destroy(&m);
                    return 1;
                }
                sgd_steps(st, 10);
                long n = 1;
                for (;;) { /* steps per chunk */
                    double t0 = clock_now_s();
                    sgd_steps(st, n);
                    double t = clock_now_s() - t0;
                    if (t >= BENCH_CHUNK_S)
                        break;
                    n = (long)((double)n * (t > 0 ? fmin(8.0, 1.2 * BENCH_CHUNK_S / t) : 8.0)) + 1;
                }
                /* whole rounds of the step's cycle in every chunk: one draw of the samples ahead
                 * (with the factor's read for all of them) and whole two-step pairs, so that the
                 * best chunk is not one that missed them (at d = 3200 a chunk of one step timed
                 * the pass alone, 1490 us where eight steps take 1900 each) */
                long unit = sgd_samples_per_factor_read(st);
                if (unit % sgd_steps_per_pass(st))
                    unit *= sgd_steps_per_pass(st);
                n = (n + unit - 1) / unit * unit;
                double best_us = INFINITY, bw = 0, rate = 0, slice = seconds / BENCH_ROUNDS;
                for (int round = 0; round < BENCH_ROUNDS; round++) {
                    best_us = fmin(best_us, step_us(st, n, 0.45 * slice));
                    bw = fmax(bw, bandwidth(&w, 0.45 * slice));
                    rate = fmax(rate, fma_rate(single, 0.1 * slice));
                }
                bw_free(&w);
                /* the parameters' bytes once per pass, which may make two steps (direct) */
                double el = single ? 4.0 : 8.0,
                       bytes = 2 * el * (double)par / sgd_steps_per_pass(st) + el * (double)fac;
                /* 2T multiply-adds per parameter entry and T per entry of the factor (T = 2) */
                double fmas = 4.0 * (double)par + 2.0 * (double)m->d * m->tk;
                double us = best_us, mem = 1e6 * bytes / bw, comp = 1e6 * fmas / rate,
                       roof = fmax(mem, comp);
                if (csv)
                    printf("%s,%d,%s,%.1f,%.6g,%.0f,%.2f,%.6g,%.0f,%.6g,%.6g,%.6g,%.4g,%zu,%s\n",
                           names[di], m->d, single ? "single" : "double", 1e6 / us, us, bytes,
                           bw / 1e9, mem, fmas, rate / 1e9, comp, roof, us / roof, par,
                           kern_path());
                else
                    printf(
                        "%-7s %5d %-6s %10.1f %8.2f %10.0f %8.1f %8.2f %9.0f %8.1f %8.2f %6.2f\n",
                        names[di], m->d, single ? "single" : "double", 1e6 / us, us, bytes,
                        bw / 1e9, mem, fmas, rate / 1e9, comp, us / roof);
                fflush(stdout);
                sgd_state_destroy(&st);
            }
            model_destroy(&m);
        }
    }
    return 0;
}
