/*
 * vr.h: the volume-rendering kernel shared by the Synodic program (through
 * the Lua module volume.c) and the MPI program (volume_mpi.c): a volume
 * made deterministically (a sum of Gaussian blobs), rendered by ray casting
 * (trilinear sampling, front-to-back compositing), any rectangle of the
 * image at a time, so that the image can be dealt out by pixels, scanlines
 * or blocks. The same rectangle gives the same bytes in either program.
 */
#ifndef VR_H
#define VR_H

#include <stddef.h>

/* An n x n x n volume of densities in [0, 1], floats, x fastest. */
void vr_volume(float *vol, int n, unsigned long seed);

/* Renders pixels [x0, x0 + w) x [y0, y0 + h) of a W x H image of `vol`
   (seen from the angle `turn`, radians about the vertical axis) into
   `out`, w * h RGB bytes, row after row. */
void vr_render(const float *vol, int n, int W, int H, double turn, int x0, int y0, int w, int h, unsigned char *out);

/* Writes W x H RGB bytes as a PNG file (stored, uncompressed deflate);
   0, or -1 when the file cannot be written. */
int vr_png(const char *path, const unsigned char *rgb, int W, int H);

/* The task `t` of a partition of a W x H image: "pixel" (1 x 1), "scanline"
   (W x 1) or "block" (B x B, the last ones cut at the edges); returns the
   number of tasks, and, for t in range, the rectangle. */
int vr_task(const char *partition, int W, int H, int B, int t, int *x0, int *y0, int *w, int *h);

#endif
