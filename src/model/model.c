/*
 * model.c: teacher and initial student of one grid point, order parameters, the reference
 * per-sample index and loss.
 *
 * Initialisations of the student (docs/model.md §3, §11), s0 = init_scale, r = round(width d),
 * kappa = sqrt(r d):
 *   direct:   S = s0 goe, plus init_trace t: S = s0 goe + t I. Then t1(0) = t + Tr(s0 goe)/d and
 *             Omega12(0) = s0 Tr(goe S*)/d + t t2 (t2 = Tr(S*)/d): the trace reaches the
 *             teacher's trace. The centred index removes only the mean delta_ab Tr S, so the
 *             loss sees the shift through Omega11 and Psi11 (t^2 + 2 t t1 more each).
 *   gaussian: W (tied) or U, V (untied) with i.i.d. N(0, s0^2) entries.
 *   orthogonal: the same Gaussian draw G (d x r, r <= d) made orthonormal, G = Q R with
 *             diag R > 0 (so Q is Haar on the Stiefel manifold), and W = c Q, scaled so that
 *             Omega11(0) equals the Gaussian's expectation at the same s0:
 *     tied: Omega11 = Tr(S^2)/d = |W^T W|_F^2/(kappa^2 d) = |W^T W|_F^2/(r d^2). Gaussian:
 *           E|W^T W|_F^2 = r E|w|^4 + r(r-1) E(w.w')^2 = s0^4 [r(d^2 + 2d) + r(r-1) d]
 *           = s0^4 r d (d + r + 1), so E Omega11 = s0^4 (d + r + 1)/d. Orthogonal: W^T W = c^2 I_r,
 *           Omega11 = c^4/d^2 exactly, hence c^2 = s0^2 sqrt(d (d + r + 1)).
 *           The trace rises at that Omega11: t1 = |W|_F^2/(kappa d) is s0^2 sqrt(r/d) for the
 *           Gaussian (in expectation) and c^2 r/(kappa d) = s0^2 sqrt(r/d) sqrt(1 + (r+1)/d) for
 *           the orthogonal start (sqrt 2 larger at width 1, where S = t1 I exactly: the largest
 *           t1 that Omega11 allows, Omega11 = t1^2).
 *     untied: U, V independent. Omega11 = Tr(U^T U V^T V)/(kappa^2 d); Gaussian: E = s0^4 d^2 r
 *           /(r d^2) = s0^4. Orthogonal: U^T U = V^T V = c^2 I_r, Omega11 = c^4/d^2, hence
 *           c^2 = s0^2 d (t1 stays O(s0^2/d) for both: the two frames are independent).
 */
#include "aimsweep/model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "aimsweep/model/act.h"
#include "aimsweep/model/phi.h"
#include "aimsweep/model/rng.h"

/* LAPACK's symmetric eigensolver (OpenBLAS ships LAPACK). */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
                   double *w, double *work, const int *lwork, int *info);
/* and its Householder QR: the factorisation and the explicit Q. */
extern void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau,
                    double *work, const int *lwork, int *info);
extern void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
                    const double *tau, double *work, const int *lwork, int *info);

/* n doubles, or NULL (also when the byte count would overflow). Freed with free. */
static double *dalloc(size_t n)
{
    if (n > SIZE_MAX / sizeof(double))
        return NULL;
    return malloc(sizeof(double) * (n ? n : 1));
}

/* A symmetric GOE matrix (A + A^T)/sqrt(2d), A with N(0,1) entries, into S (d x d). Returns 0,
 * or -1 when out of memory. */
static int sample_goe(struct rng *g, int d, double *S)
{
    double *A = dalloc((size_t)d * d);
    if (!A)
        return -1;
    rng_normals(g, A, (size_t)d * d);
    double f = 1.0 / sqrt(2.0 * d);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            S[(size_t)i * d + j] = f * (A[(size_t)i * d + j] + A[(size_t)j * d + i]);
    free(A);
    return 0;
}

/* Eigendecomposition S = Q diag(lam) Q^T into the signed factor F = Q |lam|^{1/2}. */
static int factor_symmetric(int d, const double *S, double *F, double *sign)
{
    double *a = dalloc((size_t)d * d), *w = dalloc((size_t)d), q, *work = NULL;
    int info = -1, lwork = -1;
    if (!a || !w)
        goto out;
    memcpy(a, S, sizeof(double) * (size_t)d * d);
    dsyev_("V", "U", &d, a, &d, w, &q, &lwork, &info);
    if (info != 0 || !(q >= 1 && q < 2147483647.0)) {
        info = -1;
        goto out;
    }
    lwork = (int)q;
    if (!(work = dalloc((size_t)lwork))) {
        info = -1;
        goto out;
    }
    dsyev_("V", "U", &d, a, &d, w, work, &lwork, &info);
    /* column-major eigenvectors: eigenvector j is a[j*d .. j*d+d-1] */
    for (int j = 0; j < d; j++) {
        double s = sqrt(fabs(w[j]));
        sign[j] = w[j] < 0 ? -1.0 : 1.0;
        for (int i = 0; i < d; i++)
            F[(size_t)i * d + j] = a[(size_t)j * d + i] * s;
    }
out:
    free(work);
    free(a);
    free(w);
    return info == 0 ? 0 : -1;
}

/* Returns 0, or -1 when out of memory or the eigensolver fails. */
static int make_teacher(struct model *m)
{
    const struct params *p = &m->p;
    int d = m->d;
    struct rng g;
    rng_init(&g, p->seed, STREAM_TEACHER, (uint32_t)d);
    double *S = m->teacher;
    if (p->teacher.kind == TEACHER_WISHART) {
        /* params_validate keeps rho in (0, 16], so r* = round(rho d) fits an int */
        int rs = (int)lround(p->teacher.arg * d);
        double *W = rs >= 1 ? dalloc((size_t)d * rs) : NULL;
        if (!W)
            return -1;
        rng_normals(&g, W, (size_t)d * rs);
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, d, rs, 1.0, W, rs, 0.0, S, d);
        for (int i = 0; i < d; i++)
            for (int j = 0; j < i; j++)
                S[(size_t)i * d + j] = S[(size_t)j * d + i];
        double fro = cblas_ddot(d * d, S, 1, S, 1) / d;
        double c = 1.0 / sqrt(fro); /* the W W^T/sqrt(r* d) prefactor cancels in the rescale */
        cblas_dscal(d * d, c, S, 1);
        m->tk = rs;
        m->tF = W;
        m->tsign = dalloc((size_t)rs);
        if (!m->tsign)
            return -1;
        cblas_dscal(d * rs, sqrt(c), W, 1);
        for (int j = 0; j < rs; j++)
            m->tsign[j] = 1.0;
    } else if (p->teacher.kind == TEACHER_GOE_MEAN) {
        /* S* = a (G - t_G I) + (m/sqrt(d)) I (docs/model.md §10): the goe draw's own trace t_G =
         * Tr G/d is removed, so Tr S* = m sqrt(d) and mu* = m exactly; a > 0 makes Tr(S*^2)/d = 1
         * exactly: a^2 q0 + m^2/d = 1 with q0 = Tr (G - t_G I)^2/d (the cross term vanishes). */
        if (sample_goe(&g, d, S))
            return -1;
        double tg = 0, sh = p->teacher.arg / sqrt((double)d);
        for (int i = 0; i < d; i++)
            tg += S[(size_t)i * d +
                    i]; // NOLINT(clang-analyzer-core.uninitialized.Assign): sample_goe filled S
        tg /= d;
        for (int i = 0; i < d; i++)
            S[(size_t)i * d + i] -= tg;
        double q0 = cblas_ddot(d * d, S, 1, S, 1) / d, a = sqrt((1 - sh * sh) / q0);
        cblas_dscal(d * d, a, S, 1);
        for (int i = 0; i < d; i++)
            S[(size_t)i * d + i] += sh;
        m->tk = d;
        m->tF = dalloc((size_t)d * d);
        m->tsign = dalloc((size_t)d);
        if (!m->tF || !m->tsign || factor_symmetric(d, S, m->tF, m->tsign))
            return -1;
    } else {
        if (sample_goe(&g, d, S))
            return -1;
        if (p->teacher.kind == TEACHER_GOE_SHIFT)
            for (int i = 0; i < d; i++)
                S[(size_t)i * d + i] += p->teacher.arg;
        double fro = cblas_ddot(d * d, S, 1, S, 1) / d;
        cblas_dscal(d * d, 1.0 / sqrt(fro), S, 1);
        m->tk = d;
        m->tF = dalloc((size_t)d * d);
        m->tsign = dalloc((size_t)d);
        if (!m->tF || !m->tsign || factor_symmetric(d, S, m->tF, m->tsign))
            return -1;
    }
    double tr = 0;
    for (int i = 0; i < d; i++)
        tr += S[(size_t)i * d + i];
    m->t2 = tr / d;
    return 0;
}

/* In place, the d x r (row-major, r <= d) Gaussian matrix G into the Q of G = Q R with diag R > 0
 * (LAPACK's Householder QR, then the signs of R's diagonal moved into Q). Returns 0, or -1 on
 * allocation or LAPACK failure. */
static int orthonormalise(int d, int r, double *G)
{
    double *a = dalloc((size_t)d * r), *tau = dalloc((size_t)r), *sgn = dalloc((size_t)r),
           *work = NULL, q;
    int info = -1, lwork, rc = -1;
    if (!a || !tau || !sgn)
        goto done;
    for (int i = 0; i < d; i++) /* column-major copy */
        for (int j = 0; j < r; j++)
            a[(size_t)j * d + i] = G[(size_t)i * r + j];
    double q2;
    int query = -1;
    dgeqrf_(&d, &r, a, &d, tau, &q, &query, &info); /* workspace queries */
    if (info)
        goto done;
    dorgqr_(&d, &r, &r, a, &d, tau, &q2, &query, &info);
    if (info)
        goto done;
    lwork = (int)(q > q2 ? q : q2);
    if (!(work = dalloc((size_t)lwork)))
        goto done;
    dgeqrf_(&d, &r, a, &d, tau, work, &lwork, &info);
    if (info)
        goto done;
    for (int j = 0; j < r; j++)
        sgn[j] = a[(size_t)j * d + j] < 0 ? -1.0 : 1.0;
    dorgqr_(&d, &r, &r, a, &d, tau, work, &lwork, &info);
    if (info)
        goto done;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < r; j++)
            G[(size_t)i * r + j] = sgn[j] * a[(size_t)j * d + i];
    rc = 0;
done:
    free(a);
    free(tau);
    free(sgn);
    free(work);
    return rc;
}

double model_orthogonal_scale(enum decomp decomposition, int d, int r, double s0)
{
    double c2 =
        decomposition == DECOMP_TIED ? s0 * s0 * sqrt((double)d * (d + r + 1.0)) : s0 * s0 * d;
    return sqrt(c2);
}

/* Returns 0, or -1 when out of memory. */
static int make_student(struct model *m)
{
    const struct params *p = &m->p;
    struct rng g;
    rng_init(&g, p->seed, STREAM_INIT, (uint32_t)m->d);
    size_t dr = (size_t)m->d * m->r;
    if (p->decomposition == DECOMP_DIRECT) {
        if (sample_goe(&g, m->d, m->S0))
            return -1;
        cblas_dscal(m->d * m->d, p->init_scale, m->S0, 1);
        if (p->init_trace != 0)
            for (int i = 0; i < m->d; i++)
                m->S0[(size_t)i * m->d + i] += p->init_trace;
        return 0;
    }
    double *F[2] = {m->W0, p->decomposition == DECOMP_UNTIED ? m->V0 : NULL};
    for (int f = 0; f < 2 && F[f]; f++) {
        rng_normals(&g, F[f], dr);
        if (p->init == INIT_ORTHOGONAL) {
            if (orthonormalise(m->d, m->r, F[f]))
                return -1;
            cblas_dscal((int)dr,
                        model_orthogonal_scale(p->decomposition, m->d, m->r, p->init_scale), F[f],
                        1);
        } else {
            cblas_dscal((int)dr, p->init_scale, F[f], 1);
        }
    }
    return 0;
}

struct model *model_create(const struct params *p)
{
    struct model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->p = *p;
    m->d = p->d;
    m->T = p->tokens;
    m->r = p->decomposition == DECOMP_DIRECT ? p->d : params_rank(p);
    m->kappa = p->decomposition == DECOMP_DIRECT ? 1.0 : sqrt((double)m->r * m->d);
    size_t dd = (size_t)m->d * m->d, dr = (size_t)m->d * m->r;
    m->teacher = dalloc(dd);
    if (p->decomposition == DECOMP_DIRECT)
        m->S0 = dalloc(dd);
    else
        m->W0 = dalloc(dr);
    if (p->decomposition == DECOMP_UNTIED)
        m->V0 = dalloc(dr);
    if (!m->teacher || (p->decomposition == DECOMP_DIRECT ? !m->S0 : !m->W0) ||
        (p->decomposition == DECOMP_UNTIED && !m->V0))
        goto fail;
    if (make_teacher(m) || make_student(m))
        goto fail;
    model_token_cov(p, m->C, m->L, m->cidx);
    m->corr = p->token_corr != 0;
    m->mu_star = sqrt((double)m->d) * m->t2;
    phi_law_of(p, m->mu_star, &m->law);
    return m;
fail:
    model_destroy(&m);
    return NULL;
}

void model_destroy(struct model **pm)
{
    if (!pm || !*pm)
        return;
    struct model *m = *pm;
    free(m->teacher);
    free(m->tF);
    free(m->tsign);
    free(m->S0);
    free(m->W0);
    free(m->V0);
    free(m);
    *pm = NULL;
}

int student_init_copy(struct student *s, const struct model *m)
{
    memset(s, 0, sizeof *s);
    s->decomposition = m->p.decomposition;
    s->d = m->d;
    s->r = m->r;
    s->kappa = m->kappa;
    size_t n = s->decomposition == DECOMP_DIRECT ? (size_t)m->d * m->d : (size_t)m->d * m->r;
    s->A = dalloc(n);
    if (!s->A)
        return -1;
    memcpy(s->A, s->decomposition == DECOMP_DIRECT ? m->S0 : m->W0, sizeof(double) * n);
    if (s->decomposition == DECOMP_UNTIED) {
        s->B = dalloc(n);
        if (!s->B) {
            student_free(s);
            return -1;
        }
        memcpy(s->B, m->V0, sizeof(double) * n);
    }
    return 0;
}

void student_free(struct student *s)
{
    free(s->A);
    free(s->B);
    s->A = s->B = NULL;
}

int model_order_params(const struct model *m, const struct student *s, struct order_params *o)
{
    int d = s->d, r = s->r;
    double k = s->kappa;
    const double *P = m->teacher;
    if (s->decomposition == DECOMP_DIRECT) {
        const double *S = s->A;
        double om = 0, ps = 0, o12 = 0, tr = 0;
        for (int i = 0; i < d; i++) {
            tr += S[(size_t)i * d + i];
            for (int j = 0; j < d; j++) {
                double v = S[(size_t)i * d + j];
                om += v * v;
                ps += v * S[(size_t)j * d + i];
                o12 += v * P[(size_t)i * d + j];
            }
        }
        o->omega11 = om / d;
        o->psi11 = ps / d;
        o->omega12 = o12 / d;
        o->t1 = tr / d;
        return 0;
    }
    int rc = 0;
    double *PA = dalloc((size_t)d * r);
    if (!PA) {
        rc = -1;
    } else if (s->decomposition == DECOMP_TIED) {
        const double *W = s->A;
        double *B = dalloc((size_t)r * r);
        if (!B) {
            free(PA);
            goto oom;
        }
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, r, d, 1.0, W, r, 0.0, B, r);
        double fro = 0, tr = 0;
        for (int i = 0; i < r; i++) {
            tr += B[(size_t)i * r + i];
            fro += B[(size_t)i * r + i] * B[(size_t)i * r + i];
            for (int j = i + 1; j < r; j++)
                fro += 2 * B[(size_t)i * r + j] * B[(size_t)i * r + j];
        }
        cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, r, 1.0, P, d, W, r, 0.0, PA, r);
        o->omega11 = o->psi11 = fro / (k * k * d);
        o->omega12 = cblas_ddot(d * r, W, 1, PA, 1) / (k * d);
        o->t1 = tr / (k * d);
        free(B);
    } else {
        const double *U = s->A, *V = s->B;
        double *UU = dalloc((size_t)r * r), *VV = dalloc((size_t)r * r),
               *VU = dalloc((size_t)r * r);
        if (!UU || !VV || !VU) {
            free(UU);
            free(VV);
            free(VU);
            free(PA);
            goto oom;
        }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, U, r, U, r, 0.0, UU, r);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, V, r, V, r, 0.0, VV, r);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, d, 1.0, V, r, U, r, 0.0, VU, r);
        double om = cblas_ddot(r * r, UU, 1, VV, 1), ps = 0, tr = 0;
        for (int i = 0; i < r; i++) {
            tr += VU[(size_t)i * r + i];
            for (int j = 0; j < r; j++)
                ps += VU[(size_t)i * r + j] * VU[(size_t)j * r + i];
        }
        cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, d, r, 1.0, P, d, V, r, 0.0, PA, r);
        o->omega11 = om / (k * k * d);
        o->psi11 = ps / (k * k * d);
        o->omega12 = cblas_ddot(d * r, U, 1, PA, 1) / (k * d);
        o->t1 = tr / (k * d);
        free(UU);
        free(VV);
        free(VU);
    }
    free(PA);
    if (!rc)
        return 0;
oom:
    o->omega11 = o->psi11 = o->omega12 = o->t1 = NAN;
    return -1;
}

int model_observe(const struct model *m, const struct student *s, struct obs_row *row)
{
    struct order_params o;
    struct phi_val pv;
    int rc = model_order_params(m, s, &o);
    row->omega11 = o.omega11;
    row->psi11 = o.psi11;
    row->omega12 = o.omega12;
    row->trace = o.t1;
    row->overlap = obs_overlap(o.omega11, o.omega12, o.t1, m->t2);
    row->loss = rc || phi_eval_law(&m->p.activation, m->T, &m->law, sqrt((double)m->d) * o.t1,
                                   o.omega11, o.psi11, o.omega12, &pv)
                    ? NAN
                    : pv.phi;
    return rc;
}

void model_form_S(const struct student *s, double *out)
{
    int d = s->d, r = s->r;
    if (s->decomposition == DECOMP_DIRECT)
        memcpy(out, s->A, sizeof(double) * (size_t)d * d);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, r, 1.0 / s->kappa, s->A, r,
                    s->decomposition == DECOMP_TIED ? s->A : s->B, r, 0.0, out, d);
}

void model_index(int d, int T, const double *S, const double *x, double *h)
{
    double tr = 0;
    double *Sx = dalloc((size_t)d);
    if (!Sx) {
        for (int i = 0; i < T * T; i++)
            h[i] = NAN;
        return;
    }
    for (int i = 0; i < d; i++)
        tr += S[(size_t)i * d + i];
    for (int b = 0; b < T; b++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0, S, d, x + (size_t)b * d, 1, 0.0, Sx, 1);
        for (int a = 0; a < T; a++)
            h[a * T + b] =
                (cblas_ddot(d, x + (size_t)a * d, 1, Sx, 1) - (a == b ? tr : 0)) / sqrt((double)d);
    }
    free(Sx);
}

void model_token_cov(const struct params *p, double *C, double *L, double *cidx)
{
    int T = p->tokens;
    double c = p->token_corr;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            C[a * T + b] = a == b ? 1.0 : c;
            cidx[a * T + b] = p->index == INDEX_CENTRED ? C[a * T + b] : 0.0;
            L[a * T + b] = 0;
        }
    /* Cholesky, C = L L^T; positive definite for c in [0, 1) */
    for (int j = 0; j < T; j++) {
        double s = C[j * T + j];
        for (int k = 0; k < j; k++)
            s -= L[j * T + k] * L[j * T + k];
        L[j * T + j] = sqrt(s);
        for (int i = j + 1; i < T; i++) {
            double t = C[i * T + j];
            for (int k = 0; k < j; k++)
                t -= L[i * T + k] * L[j * T + k];
            L[i * T + j] = t / L[j * T + j];
        }
    }
}

void model_correlate(int d, int T, const double *L, double *x)
{
    /* from the last token down, so that the z_b (b < a) it needs are still in place */
    for (int a = T - 1; a >= 0; a--) {
        double *xa = x + (size_t)a * d;
        double laa = L[a * T + a];
        for (int i = 0; i < d; i++)
            xa[i] *= laa;
        for (int b = 0; b < a; b++) {
            double l = L[a * T + b];
            const double *zb = x + (size_t)b * d;
            if (l != 0)
                for (int i = 0; i < d; i++)
                    xa[i] += l * zb[i];
        }
    }
}

void model_index_general(int d, int T, const double *S, const double *x, const double *cidx,
                         double *h)
{
    double tr = 0;
    double *Sx = dalloc((size_t)d);
    for (int i = 0; i < d; i++)
        tr += S[(size_t)i * d + i];
    for (int b = 0; b < T; b++) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0, S, d, x + (size_t)b * d, 1, 0.0, Sx, 1);
        for (int a = 0; a < T; a++)
            h[a * T + b] = (cblas_ddot(d, x + (size_t)a * d, 1, Sx, 1) - cidx[a * T + b] * tr) /
                           sqrt((double)d);
    }
    free(Sx);
}

double model_loss(const struct act *a, int T, const double *h, const double *hs, double *D)
{
    return model_loss_outputs(a, T, OUTPUTS_OFFDIAG, h, hs, D);
}

double model_loss_outputs(const struct act *a, int T, enum outputs_kind outputs, const double *h,
                          const double *hs, double *D)
{
    double l = 0;
    if (a->kind == ACT_SOFTMAX) {
        double p[PARAMS_MAX_TOKENS], q[PARAMS_MAX_TOKENS];
        for (int r = 0; r < T; r++) {
            act_softmax(a->beta, T, h + r * T, p);
            act_softmax(a->beta, T, hs + r * T, q);
            double pe = 0; /* p . (p - q) */
            for (int b = 0; b < T; b++) {
                l += 0.5 * (p[b] - q[b]) * (p[b] - q[b]);
                pe += p[b] * (p[b] - q[b]);
            }
            /* dl/ds_b = beta sum_c (p_c - q_c) J_cb = beta p_b ((p_b - q_b) - p.(p - q)) */
            if (D)
                for (int b = 0; b < T; b++)
                    D[r * T + b] = a->beta * p[b] * ((p[b] - q[b]) - pe);
        }
        return l;
    }
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            if (i == j && outputs != OUTPUTS_ALL) {
                if (D)
                    D[i * T + j] = 0;
                continue;
            }
            double e = act_f(a, h[i * T + j]) - act_f(a, hs[i * T + j]);
            l += 0.5 * e * e;
            if (D)
                D[i * T + j] = e * act_df(a, h[i * T + j]);
        }
    return l;
}
