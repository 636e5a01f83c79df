/*
 * pingpong: the floor under bench/cluster's ping-pong row. Two processes
 * (a fork) trade one small message (32 bytes) back and forth over one
 * loopback TCP connection (TCP_NODELAY), N round trips, and print
 * `pingpong_us=T` (microseconds a round trip), as cluster.lua and
 * cluster.erl do. Nothing is encrypted, framed or scheduled: what is left
 * is the kernel's TCP path and the wake-up of the other side.
 *
 *   spin   both sides poll their socket without sleeping (recv with
 *          MSG_DONTWAIT in a loop): no wake-up, each side needs a core
 *   block  both sides sleep in recv until the message comes
 *
 * usage: pingpong spin|block N
 * Build: cc -O2 pingpong.c -o pingpong
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SIZE = 32 };

static void fail(const char *what) {
  fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Reads exactly SIZE bytes, spinning or sleeping. */
static void take(int fd, char *buf, int spin) {
  size_t got = 0;
  while (got < SIZE) {
    ssize_t n = recv(fd, buf + got, SIZE - got, spin ? MSG_DONTWAIT : 0);
    if (n > 0) got += (size_t)n;
    else if (n == 0) { fprintf(stderr, "pingpong: the other side closed\n"); exit(1); }
    else if (errno != EAGAIN && errno != EINTR) fail("recv");
  }
}

static void give(int fd, const char *buf) {
  if (send(fd, buf, SIZE, MSG_NOSIGNAL) != SIZE) fail("send");
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "spin") && strcmp(argv[1], "block")) || atol(argv[2]) < 1) {
    fprintf(stderr, "usage: pingpong spin|block N\n");
    return 2;
  }
  int spin = !strcmp(argv[1], "spin");
  long n = atol(argv[2]);
  int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 1) ||
      getsockname(listener, (struct sockaddr *)&addr, &len))
    fail("listen");
  pid_t child = fork();
  if (child < 0) fail("fork");
  char buf[SIZE];
  memset(buf, 7, SIZE);
  if (child == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr)) fail("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (long i = 0; i <= n; i++) take(fd, buf, spin), give(fd, buf);
    return 0;
  }
  int fd = accept(listener, NULL, NULL);
  if (fd < 0) fail("accept");
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  give(fd, buf), take(fd, buf, spin); /* the first round trip warms both sides */
  double t = now();
  for (long i = 0; i < n; i++) give(fd, buf), take(fd, buf, spin);
  double took = now() - t;
  int status;
  waitpid(child, &status, 0);
  printf("pingpong_us=%.2f\n", took * 1e6 / n);
  return 0;
}
