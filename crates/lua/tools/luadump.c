/*
** luadump: compiles Lua source files to bytecode at build time (run by
** crates/lua/build.rs), so that a node loads its bundled modules without
** parsing them at every start. Usage: luadump STRINGS OUT CHUNKNAME IN
** [...], three arguments per file. The dump keeps debug information:
** tracebacks still name the chunk (`@lualib/NAME.lua`) and the line.
**
** STRINGS gets every short string the chunks hold (each as a length byte
** and its bytes): a node interns them all into its shared code at start,
** so that a module it loads there later finds each of its strings already
** shared (crates/lua/src/vm/shared.rs). The collector is stopped, so the
** string table holds every string the parser made: a superset of those the
** bytecode names.
*/
#include <stdio.h>
#include <stdlib.h>

#include "lua.h"
#include "lauxlib.h"
#include "lstate.h"
#include "lstring.h"

/* Writes every short string of L's string table to path. */
static int write_strings (lua_State *L, const char *path) {
  stringtable *tb = &G(L)->strt;
  int i;
  FILE *out = fopen(path, "wb");
  if (out == NULL) return 1;
  for (i = 0; i < tb->size; i++) {
    TString *ts;
    for (ts = tb->hash[i]; ts != NULL; ts = ts->u.hnext) {
      unsigned char len = ts->shrlen;
      if (fwrite(&len, 1, 1, out) != 1 || fwrite(getstr(ts), 1, len, out) != len) {
        fclose(out);
        return 1;
      }
    }
  }
  return fclose(out) != 0;
}

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
  if (L == NULL || argc < 2) return 1;
  lua_gc(L, LUA_GCSTOP);
  for (i = 2; i + 2 < argc; i += 3) {
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
  if (write_strings(L, argv[1]) != 0) {
    fprintf(stderr, "luadump: cannot write %s\n", argv[1]);
    return 1;
  }
  lua_close(L);
  return 0;
}
