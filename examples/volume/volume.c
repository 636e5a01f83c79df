/*
 * volume: the ray-casting kernel (vr.c) as a C module for Synodic; volumes
 * and images are synodic.buffer values. The MPI program links vr.c too.
 *
 *   local volume = require "volume"
 *   local vol = volume.new(n, seed)                        -- n^3 floats
 *   local part = volume.render(vol, n, W, H, turn, x0, y0, w, h)  -- w*h RGB bytes
 *   local count, x0, y0, w, h = volume.task(partition, W, H, B, t)  -- t from 0
 *   local img = volume.image(W, H)                          -- W*H RGB bytes, black
 *   volume.put(img, W, part, x0, y0, w, h)                  -- part into img
 *   volume.png(img, W, H, path)                             -- a PNG file
 *   volume.checksum(img)                                    -- FNV-1a of the bytes
 *
 * Build: cc -O2 -shared -fPIC -I vendor/lua-5.4.8 -I include \
 *          examples/volume/volume.c examples/volume/vr.c -o volume.so -lm
 */
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include "synodic.h"
#include "vr.h"

static const unsigned char *bytes(lua_State *L, int idx, size_t want) {
  size_t len;
  const unsigned char *b = synodic_buffer_bytes(L, idx, &len);
  if (b == NULL) luaL_typeerror(L, idx, "buffer");
  if (want && len != want) luaL_error(L, "a buffer of %d bytes where %d were expected", (int)len, (int)want);
  return b;
}

static unsigned char *fresh(lua_State *L, size_t len) {
  unsigned char *b = synodic_buffer_new(L, len);
  if (b == NULL) luaL_error(L, "not enough memory for %d bytes", (int)len);
  return b;
}

static int new(lua_State *L) {
  int n = (int)luaL_checkinteger(L, 1);
  if (n < 2 || n > 512) luaL_argerror(L, 1, "2 to 512 voxels a side");
  vr_volume((float *)fresh(L, (size_t)n * n * n * sizeof(float)), n, (unsigned long)luaL_optinteger(L, 2, 1));
  return 1;
}

static int render(lua_State *L) {
  int n = (int)luaL_checkinteger(L, 2), W = (int)luaL_checkinteger(L, 3), H = (int)luaL_checkinteger(L, 4);
  double turn = luaL_checknumber(L, 5);
  int x0 = (int)luaL_checkinteger(L, 6), y0 = (int)luaL_checkinteger(L, 7), w = (int)luaL_checkinteger(L, 8), h = (int)luaL_checkinteger(L, 9);
  if (n < 2 || W < 1 || H < 1 || w < 1 || h < 1 || x0 < 0 || y0 < 0 || x0 + w > W || y0 + h > H) luaL_error(L, "render: a rectangle outside the image");
  const float *vol = (const float *)bytes(L, 1, (size_t)n * n * n * sizeof(float));
  vr_render(vol, n, W, H, turn, x0, y0, w, h, fresh(L, (size_t)w * h * 3));
  return 1;
}

static int task(lua_State *L) {
  const char *partition = luaL_checkstring(L, 1);
  int W = (int)luaL_checkinteger(L, 2), H = (int)luaL_checkinteger(L, 3), B = (int)luaL_checkinteger(L, 4), t = (int)luaL_checkinteger(L, 5);
  if (strcmp(partition, "pixel") && strcmp(partition, "scanline") && strcmp(partition, "block")) luaL_argerror(L, 1, "pixel, scanline or block");
  if (W < 1 || H < 1 || B < 1) luaL_error(L, "task: an empty image or block");
  int x0 = 0, y0 = 0, w = 0, h = 0;
  int count = vr_task(partition, W, H, B, t, &x0, &y0, &w, &h);
  lua_pushinteger(L, count);
  lua_pushinteger(L, x0); lua_pushinteger(L, y0); lua_pushinteger(L, w); lua_pushinteger(L, h);
  return 5;
}

static int image(lua_State *L) {
  lua_Integer W = luaL_checkinteger(L, 1), H = luaL_checkinteger(L, 2);
  if (W < 1 || H < 1) luaL_error(L, "image: an empty image");
  fresh(L, (size_t)W * H * 3);
  return 1;
}

static int put(lua_State *L) {
  size_t len;
  bytes(L, 1, 0);
  int W = (int)luaL_checkinteger(L, 2);
  int x0 = (int)luaL_checkinteger(L, 4), y0 = (int)luaL_checkinteger(L, 5), w = (int)luaL_checkinteger(L, 6), h = (int)luaL_checkinteger(L, 7);
  const unsigned char *part = bytes(L, 3, (size_t)w * h * 3);
  unsigned char *img = synodic_buffer_bytes_mut(L, 1, &len);
  if (img == NULL) luaL_error(L, "not enough memory to write the image");
  if (W < 1 || x0 < 0 || y0 < 0 || x0 + w > W || (size_t)(y0 + h) * W * 3 > len) luaL_error(L, "put: a part outside the image");
  for (int y = 0; y < h; y++) memcpy(img + ((size_t)(y0 + y) * W + x0) * 3, part + (size_t)y * w * 3, (size_t)w * 3);
  return 0;
}

static int png(lua_State *L) {
  int W = (int)luaL_checkinteger(L, 2), H = (int)luaL_checkinteger(L, 3);
  const unsigned char *img = bytes(L, 1, (size_t)W * H * 3);
  const char *path = luaL_checkstring(L, 4);
  if (vr_png(path, img, W, H) != 0) luaL_error(L, "cannot write %s", path);
  return 0;
}

static int checksum(lua_State *L) {
  size_t len;
  const unsigned char *b = synodic_buffer_bytes(L, 1, &len);
  if (b == NULL) luaL_typeerror(L, 1, "buffer");
  unsigned long long h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ULL;
  lua_pushinteger(L, (lua_Integer)(h >> 1));
  return 1;
}

int luaopen_volume(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"new", new}, {"render", render}, {"task", task}, {"image", image}, {"put", put}, {"png", png}, {"checksum", checksum}, {NULL, NULL},
  };
  luaL_newlib(L, fns);
  return 1;
}
