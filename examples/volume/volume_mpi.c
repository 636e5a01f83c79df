/*
 * volume_mpi: the distributed volume visualization with MPI, the anchor of
 * bench/alua-apps (the protocol of examples/volume/volume.lua): rank 0
 * deals the image out by pixels, scanlines or blocks, statically (each
 * worker computes its share, dealt round robin, unasked) or dynamically
 * (two tasks a worker to start, then one more for each result), and
 * assembles the results; ranks 1.. render with the kernel of vr.c.
 *
 *   mpicc -O2 examples/volume/volume_mpi.c examples/volume/vr.c -o volume_mpi -lm
 *   mpirun -np 4 ./volume_mpi [pixel|scanline|block] [static|dynamic] [SIZE] [VOXELS] [OUT.png]
 *
 * Prints `volume_mpi: PARTITION DISTRIBUTION, SIZExSIZE, N workers: T s,
 * checksum C` as the Synodic program does (the same checksum for the same
 * image).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vr.h"

#define BLOCK 16
#define TURN 0.6

static long long checksum(const unsigned char *b, size_t len) {
  unsigned long long h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return (long long)(h >> 1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char *partition = argc > 1 ? argv[1] : "scanline", *distribution = argc > 2 ? argv[2] : "static";
  int size = argc > 3 ? atoi(argv[3]) : 128, voxels = argc > 4 ? atoi(argv[4]) : 64;
  int dynamic = strcmp(distribution, "dynamic") == 0, workers = ranks - 1;
  if (workers < 1) {
    fprintf(stderr, "volume_mpi: needs at least 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int x0, y0, w, h;
  int count = vr_task(partition, size, size, BLOCK, 0, &x0, &y0, &w, &h);
  unsigned char *part = malloc((size_t)BLOCK * size * 3 + (size_t)size * 3);
  if (rank > 0) {
    float *vol = malloc((size_t)voxels * voxels * voxels * sizeof(float));
    vr_volume(vol, voxels, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0;; k++) {
      int t;
      if (dynamic) {
        MPI_Recv(&t, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (t < 0) break;
      } else {
        t = rank - 1 + k * workers;
        if (t >= count) break;
      }
      vr_task(partition, size, size, BLOCK, t, &x0, &y0, &w, &h);
      vr_render(vol, voxels, size, size, TURN, x0, y0, w, h, part);
      MPI_Send(part, w * h * 3, MPI_UNSIGNED_CHAR, 0, t + 1, MPI_COMM_WORLD);
    }
    free(vol);
  } else {
    unsigned char *img = calloc((size_t)size * size * 3, 1);
    char *stopped = calloc((size_t)ranks, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int next = 0;
    if (dynamic)
      for (int round = 0; round < 2; round++)
        for (int r = 1; r < ranks && next < count; r++, next++) MPI_Send(&next, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
    /* A worker that got nothing (more workers than tasks) stops at once. */
    if (dynamic)
      for (int r = count + 1; r < ranks; r++) {
        int stop = -1;
        stopped[r] = 1;
        MPI_Send(&stop, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
      }
    for (int got = 0; got < count; got++) {
      MPI_Status st;
      MPI_Recv(part, BLOCK * size * 3 + size * 3, MPI_UNSIGNED_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      int t = st.MPI_TAG - 1;
      vr_task(partition, size, size, BLOCK, t, &x0, &y0, &w, &h);
      for (int y = 0; y < h; y++) memcpy(img + ((size_t)(y0 + y) * size + x0) * 3, part + (size_t)y * w * 3, (size_t)w * 3);
      if (dynamic) {
        if (next < count) {
          MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD);
          next++;
        } else if (!stopped[st.MPI_SOURCE]) {
          int stop = -1;
          stopped[st.MPI_SOURCE] = 1;
          MPI_Send(&stop, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD);
        }
      }
    }
    double took = MPI_Wtime() - t0;
    printf("volume_mpi: %s %s, %dx%d, %d workers: %.4f s, checksum %lld\n", partition, distribution, size, size, workers, took, checksum(img, (size_t)size * size * 3));
    if (argc > 5 && vr_png(argv[5], img, size, size) != 0) fprintf(stderr, "volume_mpi: cannot write %s\n", argv[5]);
    free(img);
    free(stopped);
  }
  free(part);
  MPI_Finalize();
  return 0;
}
