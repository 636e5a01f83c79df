/*
 * nbody: the Barnes-Hut kernel (bh.c) as a C module for Synodic, on bodies
 * held in synodic.buffer values (BH_FIELDS doubles a body). Lua moves the
 * buffers between processes; the arithmetic is in bh.c, which the MPI
 * program links too.
 *
 *   local nbody = require "nbody"
 *   local all = nbody.init(n, seed)                 -- n bodies
 *   local mine = nbody.step(all, lo, hi, theta [, dt]) -- bodies lo..hi-1 moved
 *   nbody.put(all, mine, lo)                        -- back into the whole
 *   nbody.accelerations(all, lo, hi, theta)         -- a buffer of 3 doubles a body
 *   nbody.direct(all, lo, hi)                       -- the same by a direct sum
 *   nbody.share(n, rank, ranks)                     -- lo, hi of a rank (0-based bodies)
 *   nbody.get(buffer, i)                            -- x, y, z, vx, vy, vz, m of body i (0-based)
 *
 * Build: cc -O2 -shared -fPIC -I vendor/lua-5.4.8 -I include \
 *          examples/nbody/nbody.c examples/nbody/bh.c -o nbody.so -lm
 */
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include "synodic.h"
#include "bh.h"

static const double *bodies(lua_State *L, int idx, size_t *n) {
  size_t len;
  const unsigned char *b = synodic_buffer_bytes(L, idx, &len);
  if (b == NULL) luaL_typeerror(L, idx, "buffer");
  if (len % (BH_FIELDS * sizeof(double)) != 0) luaL_error(L, "a buffer of %d bytes holds no whole bodies", (int)len);
  *n = len / (BH_FIELDS * sizeof(double));
  return (const double *)b;
}

static void range(lua_State *L, size_t n, size_t *lo, size_t *hi) {
  lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
  if (a < 0 || b < a || (size_t)b > n) luaL_error(L, "bodies %d to %d of %d", (int)a, (int)b, (int)n);
  *lo = (size_t)a;
  *hi = (size_t)b;
}

static double *new_doubles(lua_State *L, size_t count) {
  unsigned char *b = synodic_buffer_new(L, count * sizeof(double));
  if (b == NULL) luaL_error(L, "not enough memory for %d doubles", (int)count);
  return (double *)b;
}

static int init(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 1) luaL_argerror(L, 1, "at least one body");
  bh_init(new_doubles(L, (size_t)n * BH_FIELDS), (size_t)n, (unsigned long)luaL_optinteger(L, 2, 1));
  return 1;
}

static int step(lua_State *L) {
  size_t n, lo, hi;
  const double *all = bodies(L, 1, &n);
  range(L, n, &lo, &hi);
  double theta = luaL_checknumber(L, 4), dt = luaL_optnumber(L, 5, BH_DT);
  double *out = new_doubles(L, (hi - lo) * BH_FIELDS);
  if (bh_step(all, n, lo, hi, theta, BH_EPS, dt, out) < 0) luaL_error(L, "not enough memory for the tree");
  return 1;
}

static int accelerations(lua_State *L) {
  size_t n, lo, hi;
  const double *all = bodies(L, 1, &n);
  range(L, n, &lo, &hi);
  double theta = luaL_checknumber(L, 4);
  double *acc = new_doubles(L, (hi - lo) * 3);
  if (bh_accelerations(all, n, lo, hi, theta, BH_EPS, acc) < 0) luaL_error(L, "not enough memory for the tree");
  return 1;
}

static int direct(lua_State *L) {
  size_t n, lo, hi;
  const double *all = bodies(L, 1, &n);
  range(L, n, &lo, &hi);
  bh_direct(all, n, lo, hi, BH_EPS, new_doubles(L, (hi - lo) * 3));
  return 1;
}

/* put(all, part, lo): part's bodies into all from body lo (all is written:
   a buffer shared with another process is copied first). */
static int put(lua_State *L) {
  size_t n, m;
  bodies(L, 1, &n);
  const double *part = bodies(L, 2, &m);
  lua_Integer lo = luaL_checkinteger(L, 3);
  if (lo < 0 || (size_t)lo + m > n) luaL_error(L, "%d bodies from %d do not fit in %d", (int)m, (int)lo, (int)n);
  size_t len;
  unsigned char *dst = synodic_buffer_bytes_mut(L, 1, &len);
  if (dst == NULL) luaL_error(L, "not enough memory to write the bodies");
  memcpy(dst + (size_t)lo * BH_FIELDS * sizeof(double), part, m * BH_FIELDS * sizeof(double));
  return 0;
}

static int share(lua_State *L) {
  size_t lo, hi;
  lua_Integer n = luaL_checkinteger(L, 1), rank = luaL_checkinteger(L, 2), ranks = luaL_checkinteger(L, 3);
  if (n < 0 || ranks < 1 || rank < 0 || rank >= ranks) luaL_error(L, "share(%d, %d, %d)", (int)n, (int)rank, (int)ranks);
  bh_share((size_t)n, (int)rank, (int)ranks, &lo, &hi);
  lua_pushinteger(L, (lua_Integer)lo);
  lua_pushinteger(L, (lua_Integer)hi);
  return 2;
}

/* get(buffer, i): the doubles of body i (7), or of element i of a buffer of
   accelerations (3), as numbers. */
static int get(lua_State *L) {
  size_t len;
  const unsigned char *b = synodic_buffer_bytes(L, 1, &len);
  if (b == NULL) luaL_typeerror(L, 1, "buffer");
  lua_Integer i = luaL_checkinteger(L, 2);
  int fields = (int)luaL_optinteger(L, 3, BH_FIELDS);
  if (i < 0 || (size_t)(i + 1) * fields * sizeof(double) > len) luaL_error(L, "no element %d", (int)i);
  const double *d = (const double *)b + (size_t)i * fields;
  for (int k = 0; k < fields; k++) lua_pushnumber(L, d[k]);
  return fields;
}

int luaopen_nbody(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"init", init}, {"step", step}, {"accelerations", accelerations}, {"direct", direct},
    {"put", put}, {"share", share}, {"get", get}, {NULL, NULL},
  };
  luaL_newlib(L, fns);
  return 1;
}
