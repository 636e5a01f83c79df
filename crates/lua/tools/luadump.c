/*
** luadump: compiles Lua source files to bytecode at build time (run by
** crates/lua/build.rs), so that a node loads its bundled modules without
** parsing them at every start. Usage: luadump OUT CHUNKNAME IN [...],
** three arguments per file. The dump keeps debug information: tracebacks
** still name the chunk (`@lualib/NAME.lua`) and the line.
*/
#include <stdio.h>
#include <stdlib.h>

#include "lua.h"
#include "lauxlib.h"

static int writer (lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  return fwrite(p, 1, sz, (FILE *)ud) != sz;
}

/* The whole of file `path`, in `*n` bytes (the caller frees it). */
static char *slurp (const char *path, size_t *n) {
  char *buf;
  FILE *in = fopen(path, "rb");
  if (in == NULL) return NULL;
  fseek(in, 0, SEEK_END);
  *n = (size_t)ftell(in);
  fseek(in, 0, SEEK_SET);
  buf = malloc(*n ? *n : 1);
  if (buf != NULL && fread(buf, 1, *n, in) != *n) { free(buf); buf = NULL; }
  fclose(in);
  return buf;
}

int main (int argc, char **argv) {
  int i;
  lua_State *L = luaL_newstate();
  if (L == NULL) return 1;
  for (i = 1; i + 2 < argc; i += 3) {
    size_t n;
    FILE *out;
    char *source = slurp(argv[i + 2], &n);
    if (source == NULL) { fprintf(stderr, "luadump: cannot read %s\n", argv[i + 2]); return 1; }
    if (luaL_loadbufferx(L, source, n, argv[i + 1], "t") != LUA_OK) {
      fprintf(stderr, "luadump: %s\n", lua_tostring(L, -1));
      return 1;
    }
    free(source);
    out = fopen(argv[i], "wb");
    if (out == NULL || lua_dump(L, writer, out, 0) != 0 || fclose(out) != 0) {
      fprintf(stderr, "luadump: cannot write %s\n", argv[i]);
      return 1;
    }
    lua_pop(L, 1);
  }
  lua_close(L);
  return 0;
}
