/*
 * filters: the image filters of the Lithium paper's experiments, as a C
 * module for Synodic: a blur and an oil-paint effect, both area filters
 * over five pixels each way (an 11 x 11 window), on true-colour images held
 * in synodic.buffer values (RGB bytes, row after row). Lua only moves the
 * images around; the arithmetic is here.
 *
 *   local filters = require "filters"
 *   local img = filters.picture(640, 480, seed)   -- a synthetic picture
 *   local soft = filters.blur(img, 640, 480, 5)
 *   local oily = filters.oil(soft, 640, 480, 5, 20)
 *   filters.checksum(oily)                         -- an integer
 *
 * Build it against Synodic's Lua headers and include/synodic.h:
 *   cc -O2 -shared -fPIC -I vendor/lua-5.4.8 -I include \
 *      examples/skel/filters.c -o filters.so
 */
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include "synodic.h"

/* The image argument at `idx`: its bytes, checked against w x h x 3. */
static const unsigned char *image(lua_State *L, int idx, lua_Integer w, lua_Integer h) {
  size_t len;
  const unsigned char *px = synodic_buffer_bytes(L, idx, &len);
  if (px == NULL) luaL_typeerror(L, idx, "buffer");
  if (w <= 0 || h <= 0 || (size_t)(w * h * 3) != len)
    luaL_error(L, "image of %d bytes is not %dx%d RGB", (int)len, (int)w, (int)h);
  return px;
}

static unsigned char *new_image(lua_State *L, lua_Integer w, lua_Integer h) {
  unsigned char *out = synodic_buffer_new(L, (size_t)(w * h * 3));
  if (out == NULL) luaL_error(L, "not enough memory for a %dx%d image", (int)w, (int)h);
  return out;
}

/* blur(img, w, h, radius): each channel averaged over the window. */
static int blur(lua_State *L) {
  lua_Integer w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3);
  int r = (int)luaL_optinteger(L, 4, 5);
  const unsigned char *in = image(L, 1, w, h);
  unsigned char *out = new_image(L, w, h);
  for (int y = 0; y < h; y++) {
    int y0 = y - r < 0 ? 0 : y - r, y1 = y + r >= h ? (int)h - 1 : y + r;
    for (int x = 0; x < w; x++) {
      int x0 = x - r < 0 ? 0 : x - r, x1 = x + r >= w ? (int)w - 1 : x + r;
      unsigned sum[3] = {0, 0, 0}, n = 0;
      for (int yy = y0; yy <= y1; yy++) {
        const unsigned char *row = in + ((size_t)yy * w + x0) * 3;
        for (int xx = x0; xx <= x1; xx++, row += 3, n++) {
          sum[0] += row[0]; sum[1] += row[1]; sum[2] += row[2];
        }
      }
      unsigned char *o = out + ((size_t)y * w + x) * 3;
      for (int c = 0; c < 3; c++) o[c] = (unsigned char)(sum[c] / n);
    }
  }
  return 1;
}

/* oil(img, w, h, radius, levels): each pixel takes the mean colour of the
   most common intensity level in its window. */
static int oil(lua_State *L) {
  lua_Integer w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3);
  int r = (int)luaL_optinteger(L, 4, 5), levels = (int)luaL_optinteger(L, 5, 20);
  if (levels < 1 || levels > 256) return luaL_argerror(L, 5, "levels must be 1 to 256");
  const unsigned char *in = image(L, 1, w, h);
  unsigned char *out = new_image(L, w, h);
  unsigned count[256], sum[256][3];
  for (int y = 0; y < h; y++) {
    int y0 = y - r < 0 ? 0 : y - r, y1 = y + r >= h ? (int)h - 1 : y + r;
    for (int x = 0; x < w; x++) {
      int x0 = x - r < 0 ? 0 : x - r, x1 = x + r >= w ? (int)w - 1 : x + r;
      memset(count, 0, sizeof(unsigned) * levels);
      memset(sum, 0, sizeof(sum[0]) * levels);
      for (int yy = y0; yy <= y1; yy++) {
        const unsigned char *row = in + ((size_t)yy * w + x0) * 3;
        for (int xx = x0; xx <= x1; xx++, row += 3) {
          int level = (row[0] + row[1] + row[2]) * levels / (3 * 256);
          count[level]++;
          sum[level][0] += row[0]; sum[level][1] += row[1]; sum[level][2] += row[2];
        }
      }
      int best = 0;
      for (int l = 1; l < levels; l++) if (count[l] > count[best]) best = l;
      unsigned char *o = out + ((size_t)y * w + x) * 3;
      for (int c = 0; c < 3; c++) o[c] = (unsigned char)(sum[best][c] / count[best]);
    }
  }
  return 1;
}

/* picture(w, h, seed): a synthetic true-colour picture (discs on bands of
   colour), so that the example needs no image files. */
static int picture(lua_State *L) {
  lua_Integer w = luaL_checkinteger(L, 1), h = luaL_checkinteger(L, 2);
  unsigned seed = (unsigned)luaL_optinteger(L, 3, 1);
  if (w <= 0 || h <= 0) return luaL_error(L, "picture: size must be positive");
  unsigned char *px = new_image(L, w, h);
  int cx[6], cy[6], rad[6];
  for (int i = 0; i < 6; i++) {
    seed = seed * 1103515245u + 12345u; cx[i] = (int)((seed >> 8) % (unsigned)w);
    seed = seed * 1103515245u + 12345u; cy[i] = (int)((seed >> 8) % (unsigned)h);
    seed = seed * 1103515245u + 12345u; rad[i] = (int)((seed >> 8) % (unsigned)(h / 4 + 1)) + 8;
  }
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      unsigned char *p = px + ((size_t)y * w + x) * 3;
      p[0] = (unsigned char)(x * 255 / w); p[1] = (unsigned char)(y * 255 / h); p[2] = (unsigned char)((x ^ y) & 0xff);
      for (int i = 0; i < 6; i++) {
        int dx = x - cx[i], dy = y - cy[i];
        if (dx * dx + dy * dy < rad[i] * rad[i]) {
          p[0] = (unsigned char)(37 * i + 60); p[1] = (unsigned char)(255 - 40 * i); p[2] = (unsigned char)(90 + 25 * i);
        }
      }
    }
  }
  return 1;
}

/* checksum(buffer): a number that changes with any byte (FNV-1a). */
static int checksum(lua_State *L) {
  size_t len;
  const unsigned char *b = synodic_buffer_bytes(L, 1, &len);
  if (b == NULL) return luaL_typeerror(L, 1, "buffer");
  unsigned long long hash = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) hash = (hash ^ b[i]) * 1099511628211ull;
  lua_pushinteger(L, (lua_Integer)(hash >> 1));
  return 1;
}

int luaopen_filters(lua_State *L) {
  static const luaL_Reg fns[] = {{"blur", blur}, {"oil", oil}, {"picture", picture}, {"checksum", checksum}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
