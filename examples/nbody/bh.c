/*
 * bh.c: the Barnes-Hut N-body kernel (see bh.h). The octree is a flat
 * array of cells built by inserting the bodies in order, then summed up
 * (mass and centre of mass per cell); a body's acceleration walks it from
 * the root, children in a fixed order, opening a cell unless its size over
 * its distance is below the opening angle. Everything is deterministic:
 * the same bodies give the same tree and the same sums, bit for bit, in
 * whichever program the kernel is linked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bh.h"

/* Below this depth cells split; deeper, bodies share a leaf (a chain). */
#define MAX_DEPTH 48

typedef struct {
  double cx, cy, cz, half;      /* the cube */
  double m, mx, my, mz;         /* mass, then centre of mass once summed */
  int child[8];                 /* -1: none */
  long body;                    /* a leaf's first body (-1: an inner cell or empty) */
} cell;

typedef struct {
  cell *cells;
  size_t len, cap;
  long *next;                   /* the next body in the same leaf (-1: none) */
} tree;

static int new_cell(tree *t, double cx, double cy, double cz, double half) {
  if (t->len == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    cell *c = realloc(t->cells, cap * sizeof(cell));
    if (c == NULL) return -1;
    t->cells = c;
    t->cap = cap;
  }
  cell *c = &t->cells[t->len];
  c->cx = cx; c->cy = cy; c->cz = cz; c->half = half;
  c->m = c->mx = c->my = c->mz = 0;
  for (int k = 0; k < 8; k++) c->child[k] = -1;
  c->body = -1;
  return (int)t->len++;
}

static int octant(const cell *c, const double *p) {
  return (p[0] >= c->cx) | ((p[1] >= c->cy) << 1) | ((p[2] >= c->cz) << 2);
}

static int child_of(tree *t, int at, int k) {
  if (t->cells[at].child[k] >= 0) return t->cells[at].child[k];
  cell c = t->cells[at];
  double h = c.half / 2;
  int made = new_cell(t, c.cx + ((k & 1) ? h : -h), c.cy + ((k & 2) ? h : -h), c.cz + ((k & 4) ? h : -h), h);
  if (made >= 0) t->cells[at].child[k] = made;
  return made;
}

/* Puts body b (at p) into the tree from cell `at`, `depth` deep. */
static int insert(tree *t, const double *all, int at, long b, int depth) {
  const double *p = all + b * BH_FIELDS;
  for (;;) {
    cell *c = &t->cells[at];
    int inner = c->child[0] >= 0 || c->child[1] >= 0 || c->child[2] >= 0 || c->child[3] >= 0 ||
                c->child[4] >= 0 || c->child[5] >= 0 || c->child[6] >= 0 || c->child[7] >= 0;
    if (!inner && c->body < 0) { c->body = b; return 0; }
    if (!inner && depth >= MAX_DEPTH) {
      long last = c->body;
      while (t->next[last] >= 0) last = t->next[last];
      t->next[last] = b;
      return 0;
    }
    if (!inner) {
      /* A leaf with one body splits: its body goes one level down. */
      long old = c->body;
      c->body = -1;
      int k = octant(c, all + old * BH_FIELDS);
      int down = child_of(t, at, k);
      if (down < 0) return -1;
      t->cells[down].body = old;
    }
    int down = child_of(t, at, octant(&t->cells[at], p));
    if (down < 0) return -1;
    at = down;
    depth++;
  }
}

/* Mass and centre of mass of every cell, children first. */
static void sum_up(tree *t, const double *all, int at) {
  cell *c = &t->cells[at];
  double m = 0, mx = 0, my = 0, mz = 0;
  for (long b = c->body; b >= 0; b = t->next[b]) {
    const double *q = all + b * BH_FIELDS;
    m += q[6]; mx += q[6] * q[0]; my += q[6] * q[1]; mz += q[6] * q[2];
  }
  for (int k = 0; k < 8; k++) {
    int ch = t->cells[at].child[k];
    if (ch < 0) continue;
    sum_up(t, all, ch);
    const cell *d = &t->cells[ch];
    m += d->m; mx += d->m * d->mx; my += d->m * d->my; mz += d->m * d->mz;
  }
  c = &t->cells[at];
  c->m = m;
  if (m > 0) { c->mx = mx / m; c->my = my / m; c->mz = mz / m; }
}

static int build(tree *t, const double *all, size_t n) {
  memset(t, 0, sizeof *t);
  t->next = malloc((n ? n : 1) * sizeof(long));
  if (t->next == NULL) return -1;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++) {
      double v = all[i * BH_FIELDS + d];
      if (i == 0 || v < lo[d]) lo[d] = v;
      if (i == 0 || v > hi[d]) hi[d] = v;
    }
  double half = 0;
  for (int d = 0; d < 3; d++) if ((hi[d] - lo[d]) / 2 > half) half = (hi[d] - lo[d]) / 2;
  half = half * 1.0001 + 1e-12;
  if (new_cell(t, (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2, half) < 0) return -1;
  for (size_t i = 0; i < n; i++) {
    t->next[i] = -1;
    if (insert(t, all, 0, (long)i, 0) < 0) return -1;
  }
  sum_up(t, all, 0);
  return 0;
}

static void drop(tree *t) {
  free(t->cells);
  free(t->next);
}

static void pull(const double *p, double x, double y, double z, double m, double eps2, double *a) {
  double dx = x - p[0], dy = y - p[1], dz = z - p[2];
  double r2 = dx * dx + dy * dy + dz * dz + eps2;
  double inv = m / (r2 * sqrt(r2));
  a[0] += dx * inv; a[1] += dy * inv; a[2] += dz * inv;
}

/* The acceleration of body i from cell `at` (an explicit stack: no depth limit). */
static void walk(const tree *t, const double *all, long i, double theta, double eps2, double *a, int *stack) {
  const double *p = all + i * BH_FIELDS;
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const cell *c = &t->cells[stack[--top]];
    if (c->m == 0) continue;
    for (long b = c->body; b >= 0; b = t->next[b]) {
      if (b == i) continue;
      const double *q = all + b * BH_FIELDS;
      pull(p, q[0], q[1], q[2], q[6], eps2, a);
    }
    int inner = 0;
    for (int k = 0; k < 8; k++) inner |= c->child[k] >= 0;
    if (!inner) continue;
    double dx = c->mx - p[0], dy = c->my - p[1], dz = c->mz - p[2];
    double d = sqrt(dx * dx + dy * dy + dz * dz);
    if (theta > 0 && 2 * c->half < theta * d) {
      pull(p, c->mx, c->my, c->mz, c->m, eps2, a);
      continue;
    }
    /* Pushed last to first, so children are visited in order 0..7. */
    for (int k = 7; k >= 0; k--) if (c->child[k] >= 0) stack[top++] = c->child[k];
  }
}

int bh_accelerations(const double *all, size_t n, size_t lo, size_t hi, double theta, double eps, double *acc) {
  tree t;
  if (build(&t, all, n) < 0) { drop(&t); return -1; }
  int *stack = malloc((8 * MAX_DEPTH + 16) * 8 * sizeof(int));
  if (stack == NULL) { drop(&t); return -1; }
  for (size_t i = lo; i < hi; i++) {
    double *a = acc + (i - lo) * 3;
    a[0] = a[1] = a[2] = 0;
    walk(&t, all, (long)i, theta, eps * eps, a, stack);
  }
  free(stack);
  drop(&t);
  return 0;
}

void bh_direct(const double *all, size_t n, size_t lo, size_t hi, double eps, double *acc) {
  for (size_t i = lo; i < hi; i++) {
    double *a = acc + (i - lo) * 3;
    a[0] = a[1] = a[2] = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      const double *q = all + j * BH_FIELDS;
      pull(all + i * BH_FIELDS, q[0], q[1], q[2], q[6], eps * eps, a);
    }
  }
}

int bh_step(const double *all, size_t n, size_t lo, size_t hi, double theta, double eps, double dt, double *out) {
  double *acc = malloc(((hi - lo) ? (hi - lo) : 1) * 3 * sizeof(double));
  if (acc == NULL) return -1;
  if (bh_accelerations(all, n, lo, hi, theta, eps, acc) < 0) { free(acc); return -1; }
  for (size_t i = lo; i < hi; i++) {
    const double *b = all + i * BH_FIELDS;
    double *o = out + (i - lo) * BH_FIELDS;
    const double *a = acc + (i - lo) * 3;
    for (int d = 0; d < 3; d++) {
      o[3 + d] = b[3 + d] + dt * a[d];
      o[d] = b[d] + dt * o[3 + d];
    }
    o[6] = b[6];
  }
  free(acc);
  return 0;
}

void bh_share(size_t n, int rank, int ranks, size_t *lo, size_t *hi) {
  *lo = n * (size_t)rank / (size_t)ranks;
  *hi = n * (size_t)(rank + 1) / (size_t)ranks;
}

/* A 64-bit LCG (Knuth's MMIX constants): the same numbers everywhere. */
static double uniform(unsigned long long *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

void bh_init(double *bodies, size_t n, unsigned long seed) {
  unsigned long long s = seed * 2654435761ULL + 1;
  for (size_t i = 0; i < n; i++) {
    double *b = bodies + i * BH_FIELDS;
    /* Plummer's radius for a uniform mass fraction, cut at 10 scale radii. */
    double u = 0.001 + 0.998 * uniform(&s);
    double r = 1 / sqrt(pow(u, -2.0 / 3) - 1);
    if (r > 10) r = 10;
    double z = 2 * uniform(&s) - 1, phi = 6.283185307179586 * uniform(&s), rho = sqrt(1 - z * z);
    b[0] = r * rho * cos(phi); b[1] = r * rho * sin(phi); b[2] = r * z;
    for (int d = 3; d < 6; d++) b[d] = 0.1 * (2 * uniform(&s) - 1);
    b[6] = 1.0 / (double)n;
  }
}
