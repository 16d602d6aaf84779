/*
 * act.c: activations and their derivatives.
 */
#include "aimsweep/model/act.h"

#include <math.h>

#define ACT_TWO_OVER_SQRT_PI 1.1283791670955125738961589031215

/* He_0(x) .. He_degree(x) by the three-term recurrence. */
static void hermite_basis(const struct act *a, double x, double *He)
{
    He[0] = 1.0;
    if (a->degree >= 1)
        He[1] = x;
    for (int n = 1; n < a->degree; n++)
        He[n + 1] = x * He[n] - n * He[n - 1];
}

/* sum_k c_k He_k^{(m)}(x), using He_k' = k He_{k-1}. */
static double hermite_series(const struct act *a, int m, double x)
{
    double He[ACT_MAX_DEGREE + 1];
    hermite_basis(a, x, He);
    double s = 0;
    for (int k = m; k <= a->degree; k++) {
        double f = 1;
        for (int j = 0; j < m; j++)
            f *= k - j;
        s += a->c[k] * f * He[k - m];
    }
    return s;
}

double act_f(const struct act *a, double h)
{
    switch (a->kind) {
        case ACT_HERMITE: return hermite_series(a, 0, h);
        case ACT_RELU: return h > 0 ? h : 0;
        case ACT_TANH: return tanh(h);
        case ACT_ERF: return erf(h);
        case ACT_SOFTMAX: break;
    }
    return NAN;
}

/* sigma and sigma' at one point with the arithmetic of act_f and act_df (the Hermite
 * recurrence made once for both sums), so that each value is theirs bit for bit. */
void act_f_df(const struct act *a, double h, double *f, double *df)
{
    switch (a->kind) {
        case ACT_HERMITE: {
            double He[ACT_MAX_DEGREE + 1];
            hermite_basis(a, h, He);
            double s0 = 0, s1 = 0;
            for (int k = 0; k <= a->degree; k++)
                s0 += a->c[k] * He[k];
            for (int k = 1; k <= a->degree; k++)
                s1 += a->c[k] * k * He[k - 1];
            *f = s0;
            *df = s1;
            return;
        }
        case ACT_TANH: {
            double t = tanh(h);
            *f = t;
            *df = 1 - t * t;
            return;
        }
        case ACT_RELU:
        case ACT_ERF:
        case ACT_SOFTMAX: break;
    }
    *f = act_f(a, h);
    *df = act_df(a, h);
}

double act_df(const struct act *a, double h)
{
    switch (a->kind) {
        case ACT_HERMITE: return hermite_series(a, 1, h);
        case ACT_RELU:
            return h > 0 ? 1.0 : h < 0 ? 0.0 : 0.5; /* midpoint subgradient at the kink */
        case ACT_TANH: {
            double t = tanh(h);
            return 1 - t * t;
        }
        case ACT_ERF: return ACT_TWO_OVER_SQRT_PI * exp(-h * h);
        case ACT_SOFTMAX: break;
    }
    return NAN;
}

/* For relu the second derivative is a Dirac mass at 0; callers that need it handle it. */
double act_d2f(const struct act *a, double h)
{
    switch (a->kind) {
        case ACT_HERMITE: return hermite_series(a, 2, h);
        case ACT_RELU: return 0.0;
        case ACT_TANH: {
            double t = tanh(h);
            return -2 * t * (1 - t * t);
        }
        case ACT_ERF: return -2 * h * ACT_TWO_OVER_SQRT_PI * exp(-h * h);
        case ACT_SOFTMAX: break;
    }
    return NAN;
}

void act_softmax(double beta, int T, const double *s, double *p)
{
    double mx = -INFINITY, z = 0;
    for (int b = 0; b < T; b++)
        if (beta * s[b] > mx)
            mx = beta * s[b];
    for (int b = 0; b < T; b++) {
        p[b] = exp(beta * s[b] - mx);
        z += p[b];
    }
    for (int b = 0; b < T; b++)
        p[b] /= z;
}
