/*
 * bh.h: the Barnes-Hut N-body kernel shared by the Synodic program (through
 * the Lua module nbody.c) and the MPI program (nbody_mpi.c), so that both
 * compute the same thing with the same code (the ALua paper's "dual
 * programming model": C kernels, coordination elsewhere).
 *
 * Bodies are BH_FIELDS doubles each: position x y z, velocity vx vy vz,
 * mass m, one body after another. Units: G = 1.
 */
#ifndef BH_H
#define BH_H

#include <stddef.h>

#define BH_FIELDS 7
/* The softening and time step both programs use. */
#define BH_EPS 0.01
#define BH_DT 0.01

/* n bodies of a deterministic cluster (a Plummer-like sphere made with an
   LCG from `seed`): at rest on average, total mass 1. */
void bh_init(double *bodies, size_t n, unsigned long seed);

/* The accelerations (3 doubles per body) of bodies [lo, hi) of `all` (n
   bodies) by a Barnes-Hut octree over all of them, opening angle `theta`
   (0: every body is visited, a direct sum in the tree's order) and
   softening `eps`. Returns 0, or -1 when there is no memory. */
int bh_accelerations(const double *all, size_t n, size_t lo, size_t hi, double theta, double eps, double *acc);

/* The same by a direct O(n^2) sum, in body order (for the tests). */
void bh_direct(const double *all, size_t n, size_t lo, size_t hi, double eps, double *acc);

/* One step of bodies [lo, hi) of `all`: accelerations by the tree, then a
   kick and a drift of `dt` (semi-implicit Euler); the moved bodies go to
   `out` (hi - lo bodies). Returns 0, or -1 when there is no memory. */
int bh_step(const double *all, size_t n, size_t lo, size_t hi, double theta, double eps, double dt, double *out);

/* Which bodies rank `rank` of `ranks` moves: [*lo, *hi), as even as can be. */
void bh_share(size_t n, int rank, int ranks, size_t *lo, size_t *hi);

#endif
