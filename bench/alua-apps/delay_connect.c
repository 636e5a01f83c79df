/*
 * delay_connect: an LD_PRELOAD library that sends an MPI rank's TCP
 * connections through a delaying proxy, since this machine has no `tc
 * netem` to delay loopback. A TCP connect() to 127.0.0.1:P goes to
 * 127.0.0.1:$DELAY_PROXY_PORT instead, and the first two bytes written
 * name P (big-endian); the proxy (bench/skel/delay_proxy.py --route)
 * connects on to P and holds every chunk it forwards for its delay, each
 * way. Without DELAY_PROXY_PORT, or for anything else, connect() is the
 * C library's.
 *
 * The connection is made blocking for the moment it takes (to loopback:
 * at once), so a caller that asked for a non-blocking connect sees it
 * succeed at once, which a non-blocking caller must handle anyway.
 *
 * Build: cc -O2 -shared -fPIC delay_connect.c -o delay_connect.so -ldl
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  static connect_fn real;
  if (real == NULL) real = (connect_fn)dlsym(RTLD_NEXT, "connect");
  const char *proxy = getenv("DELAY_PROXY_PORT");
  int type = 0;
  socklen_t type_len = sizeof type;
  if (proxy == NULL || addr == NULL || addr->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in) ||
      getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM)
    return real(fd, addr, len);
  struct sockaddr_in to = *(const struct sockaddr_in *)addr;
  unsigned short target = ntohs(to.sin_port), via = (unsigned short)atoi(proxy);
  if (to.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || target == via || via == 0) return real(fd, addr, len);
  to.sin_port = htons(via);
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) return real(fd, addr, len);
  int r = real(fd, (const struct sockaddr *)&to, sizeof to);
  int saved = errno;
  if (r == 0) {
    unsigned char name[2] = {(unsigned char)(target >> 8), (unsigned char)target};
    if (send(fd, name, 2, MSG_NOSIGNAL) != 2) r = -1, saved = ECONNREFUSED;
  }
  fcntl(fd, F_SETFL, flags);
  errno = saved;
  return r;
}
