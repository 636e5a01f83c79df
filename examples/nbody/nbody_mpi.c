/*
 * nbody_mpi: the Barnes-Hut N-body simulation with MPI, the anchor of
 * bench/alua-apps: every rank holds every body, moves its share of them
 * with the kernel of bh.c (the one the Synodic program's module links),
 * and gets the others' with MPI_Allgatherv, each iteration.
 *
 *   mpicc -O2 examples/nbody/nbody_mpi.c examples/nbody/bh.c -o nbody_mpi -lm
 *   mpirun -np 4 ./nbody_mpi BODIES ITERATIONS [THETA [OUT]]
 *
 * Prints `nbody_mpi: N bodies, I iterations, R ranks: T s` (the loop's
 * time on rank 0); with OUT, rank 0 writes every body's position there, one
 * line each (x y z, %.17g), as examples/nbody/nbody.lua does.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "bh.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: nbody_mpi BODIES ITERATIONS [THETA [OUT]]\n");
    MPI_Finalize();
    return 2;
  }
  size_t n = (size_t)atol(argv[1]);
  int iterations = atoi(argv[2]);
  double theta = argc > 3 ? atof(argv[3]) : 0.5;
  double *all = malloc(n * BH_FIELDS * sizeof(double)), *mine = malloc(n * BH_FIELDS * sizeof(double));
  int *counts = malloc(ranks * sizeof(int)), *displs = malloc(ranks * sizeof(int));
  if (!all || !mine || !counts || !displs) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int r = 0; r < ranks; r++) {
    size_t lo, hi;
    bh_share(n, r, ranks, &lo, &hi);
    counts[r] = (int)((hi - lo) * BH_FIELDS);
    displs[r] = (int)(lo * BH_FIELDS);
  }
  size_t lo, hi;
  bh_share(n, rank, ranks, &lo, &hi);
  bh_init(all, n, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int it = 0; it < iterations; it++) {
    if (bh_step(all, n, lo, hi, theta, BH_EPS, BH_DT, mine) < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Allgatherv(mine, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  double took = MPI_Wtime() - t0;
  if (rank == 0) {
    printf("nbody_mpi: %zu bodies, %d iterations, %d ranks: %.4f s\n", n, iterations, ranks, took);
    if (argc > 4) {
      FILE *f = fopen(argv[4], "w");
      if (!f) { perror(argv[4]); MPI_Abort(MPI_COMM_WORLD, 1); }
      for (size_t i = 0; i < n; i++) fprintf(f, "%.17g %.17g %.17g\n", all[i * BH_FIELDS], all[i * BH_FIELDS + 1], all[i * BH_FIELDS + 2]);
      fclose(f);
    }
  }
  free(all); free(mine); free(counts); free(displs);
  MPI_Finalize();
  return 0;
}
