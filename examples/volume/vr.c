/*
 * vr.c: the volume-rendering kernel (see vr.h). The volume fills the unit
 * cube; rays go through it along the viewing direction (orthographic),
 * sampled every voxel's length with trilinear interpolation, each sample's
 * density mapped to a colour and an opacity, composited front to back
 * until nearly opaque. All in doubles, in a fixed order: deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vr.h"

#define BLOBS 14

static double uniform(unsigned long long *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

void vr_volume(float *vol, int n, unsigned long seed) {
  double blob[BLOBS][5]; /* centre x y z, width, weight */
  unsigned long long s = seed * 2654435761ULL + 7;
  for (int b = 0; b < BLOBS; b++) {
    for (int d = 0; d < 3; d++) blob[b][d] = 0.3 + 0.4 * uniform(&s);
    blob[b][3] = 0.04 + 0.10 * uniform(&s);
    blob[b][4] = 0.4 + 0.6 * uniform(&s);
  }
  for (int z = 0; z < n; z++)
    for (int y = 0; y < n; y++)
      for (int x = 0; x < n; x++) {
        double p[3] = {(x + 0.5) / n, (y + 0.5) / n, (z + 0.5) / n}, sum = 0;
        for (int b = 0; b < BLOBS; b++) {
          double d2 = 0;
          for (int d = 0; d < 3; d++) d2 += (p[d] - blob[b][d]) * (p[d] - blob[b][d]);
          double w2 = blob[b][3] * blob[b][3];
          if (d2 < 16 * w2) sum += blob[b][4] * exp(-d2 / (2 * w2));
        }
        vol[((size_t)z * n + y) * n + x] = (float)(sum > 1 ? 1 : sum);
      }
}

/* The density at p (in voxels, 0..n-1 each way), trilinear. */
static double sample(const float *vol, int n, const double *p) {
  int i[3];
  double f[3];
  for (int d = 0; d < 3; d++) {
    double v = p[d];
    if (v < 0 || v > n - 1) return 0;
    i[d] = (int)v;
    if (i[d] >= n - 1) i[d] = n - 2;
    f[d] = v - i[d];
  }
  const float *c = vol + ((size_t)i[2] * n + i[1]) * n + i[0];
  size_t sy = (size_t)n, sz = (size_t)n * n;
  double c00 = c[0] * (1 - f[0]) + c[1] * f[0];
  double c10 = c[sy] * (1 - f[0]) + c[sy + 1] * f[0];
  double c01 = c[sz] * (1 - f[0]) + c[sz + 1] * f[0];
  double c11 = c[sz + sy] * (1 - f[0]) + c[sz + sy + 1] * f[0];
  double c0 = c00 * (1 - f[1]) + c10 * f[1], c1 = c01 * (1 - f[1]) + c11 * f[1];
  return c0 * (1 - f[2]) + c1 * f[2];
}

void vr_render(const float *vol, int n, int W, int H, double turn, int x0, int y0, int w, int h, unsigned char *out) {
  double D[3] = {sin(turn), 0, cos(turn)}, R[3] = {cos(turn), 0, -sin(turn)}, U[3] = {0, 1, 0};
  double step = 1.0 / n;
  int steps = 2 * n;
  for (int py = y0; py < y0 + h; py++)
    for (int px = x0; px < x0 + w; px++) {
      double u = -0.75 + 1.5 * (px + 0.5) / W, v = 0.75 - 1.5 * (py + 0.5) / H;
      double col[3] = {0, 0, 0}, A = 0;
      for (int k = 0; k < steps && A < 0.99; k++) {
        double t = -1 + k * step * 1.0, p[3];
        for (int d = 0; d < 3; d++) p[d] = (0.5 + u * R[d] + v * U[d] + t * D[d]) * (n - 1);
        double dens = sample(vol, n, p);
        if (dens < 0.08) continue;
        double alpha = 1 - exp(-dens * 12 * step);
        double rgb[3] = {0.25 + 0.75 * dens, 0.1 + 0.9 * dens * dens * dens, 0.6 * (1 - dens) + 0.15};
        for (int c = 0; c < 3; c++) col[c] += (1 - A) * alpha * rgb[c];
        A += (1 - A) * alpha;
      }
      unsigned char *o = out + ((size_t)(py - y0) * w + (px - x0)) * 3;
      for (int c = 0; c < 3; c++) {
        double v8 = 255 * col[c] + 0.5;
        o[c] = (unsigned char)(v8 > 255 ? 255 : v8);
      }
    }
}

int vr_task(const char *partition, int W, int H, int B, int t, int *x0, int *y0, int *w, int *h) {
  if (strcmp(partition, "pixel") == 0) {
    *x0 = t % W; *y0 = t / W; *w = 1; *h = 1;
    return W * H;
  }
  if (strcmp(partition, "scanline") == 0) {
    *x0 = 0; *y0 = t; *w = W; *h = 1;
    return H;
  }
  int across = (W + B - 1) / B, down = (H + B - 1) / B;
  *x0 = (t % across) * B; *y0 = (t / across) * B;
  *w = *x0 + B > W ? W - *x0 : B;
  *h = *y0 + B > H ? H - *y0 : B;
  return across * down;
}

/* PNG: chunks with CRC-32, image data as a zlib stream of stored blocks. */
static unsigned long crc_table[256];

static unsigned long crc(unsigned long c, const unsigned char *b, size_t len) {
  if (crc_table[1] == 0)
    for (unsigned long n = 0; n < 256; n++) {
      unsigned long v = n;
      for (int k = 0; k < 8; k++) v = v & 1 ? 0xedb88320UL ^ (v >> 1) : v >> 1;
      crc_table[n] = v;
    }
  c ^= 0xffffffffUL;
  for (size_t i = 0; i < len; i++) c = crc_table[(c ^ b[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffUL;
}

static void be32(unsigned char *p, unsigned long v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t len) {
  unsigned char head[8];
  be32(head, (unsigned long)len);
  memcpy(head + 4, type, 4);
  unsigned long c = crc(crc(0, head + 4, 4), data, len);
  unsigned char tail[4];
  be32(tail, c);
  return fwrite(head, 1, 8, f) == 8 && (len == 0 || fwrite(data, 1, len, f) == len) && fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

int vr_png(const char *path, const unsigned char *rgb, int W, int H) {
  size_t raw_len = (size_t)H * (1 + (size_t)W * 3), blocks = raw_len / 65535 + 1;
  unsigned char *raw = malloc(raw_len), *z = malloc(raw_len + blocks * 5 + 6);
  if (!raw || !z) { free(raw); free(z); return -1; }
  for (int y = 0; y < H; y++) {
    raw[(size_t)y * (1 + (size_t)W * 3)] = 0; /* filter: none */
    memcpy(raw + (size_t)y * (1 + (size_t)W * 3) + 1, rgb + (size_t)y * W * 3, (size_t)W * 3);
  }
  size_t at = 0, done = 0;
  unsigned long a = 1, b = 0;
  z[at++] = 0x78; z[at++] = 0x01;
  do {
    size_t len = raw_len - done > 65535 ? 65535 : raw_len - done;
    z[at++] = done + len == raw_len ? 1 : 0;
    z[at++] = (unsigned char)len; z[at++] = (unsigned char)(len >> 8);
    z[at++] = (unsigned char)~len; z[at++] = (unsigned char)(~len >> 8);
    memcpy(z + at, raw + done, len);
    for (size_t i = 0; i < len; i++) { a = (a + raw[done + i]) % 65521; b = (b + a) % 65521; }
    at += len; done += len;
  } while (done < raw_len);
  be32(z + at, (b << 16) | a);
  at += 4;
  unsigned char ihdr[13];
  be32(ihdr, (unsigned long)W); be32(ihdr + 4, (unsigned long)H);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = ihdr[11] = ihdr[12] = 0;
  FILE *f = fopen(path, "wb");
  int ok = f != NULL && fwrite("\x89PNG\r\n\x1a\n", 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) == 0 && chunk(f, "IDAT", z, at) == 0 && chunk(f, "IEND", NULL, 0) == 0;
  if (f != NULL && fclose(f) != 0) ok = 0;
  free(raw); free(z);
  return ok ? 0 : -1;
}
