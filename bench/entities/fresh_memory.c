/*
** fresh_memory.c: what this machine's kernel charges for memory a process
** touches for the first time, in ns per 4 KiB page: by touching it, by
** asking for it in advance (MADV_POPULATE_WRITE), and as transparent huge
** pages (MADV_HUGEPAGE). A fork that keeps its entity alive takes fresh
** memory, so this cost is a floor under bench/entities' fork line; run.sh
** prints it beside the table. Medians of 3 rounds over 64 MiB.
** usage: cc -O2 fresh_memory.c -o fresh_memory && ./fresh_memory
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define BYTES ((size_t)64 << 20)
#define PAGE 4096
#define HUGE ((size_t)2 << 20)

static double now_ns (void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* A fresh mapping of BYTES, aligned to a huge page. */
static char *fresh (void) {
  char *p = mmap(NULL, BYTES + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); exit(1); }
  return (char *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
}

static void touch (char *p) {
  for (size_t i = 0; i < BYTES; i += PAGE) p[i] = 1;
}

/* ns per page of one way of getting BYTES of fresh memory. */
static double round_of (int how) {
  char *p = fresh();
  double t = now_ns();
  if (how == 1) {
    for (size_t off = 0; off < BYTES; off += 256 << 10)
      madvise(p + off, 256 << 10, MADV_POPULATE_WRITE);
  } else if (how == 2) {
    madvise(p, BYTES, MADV_HUGEPAGE);
  }
  touch(p);
  double per = (now_ns() - t) / (BYTES / PAGE);
  munmap(p, BYTES);  /* the tail past BYTES stays mapped: a few pages, once */
  return per;
}

static int by_value (const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of (int how) {
  double r[3];
  for (int i = 0; i < 3; i++) r[i] = round_of(how);
  qsort(r, 3, sizeof r[0], by_value);
  return r[1];
}

int main (void) {
  printf("fresh memory, ns per 4 KiB page: touched %.0f, populated in advance %.0f, huge pages %.0f\n",
         median_of(0), median_of(1), median_of(2));
  return 0;
}
