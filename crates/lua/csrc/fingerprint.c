/*
** fingerprint.c: a spawn's leading values summed up in words, in one walk
** of Lua's internals, so that a process spawning alike in a loop need not
** encode them again (src/vm/codec/memo.rs says when the words suffice).
**
** The words hold everything the encoder's output depends on: each value's
** type and contents, a string or a prototype by its address (the memo pins
** the objects so that no address is reused), each table's sizes and which
** slot holds which key and value (so that `lua_next` would visit them in
** the same order, and `lua_rawlen` find the same length), each closure's
** prototype and upvalues, which objects and upvalue cells are met twice,
** and the address of each object the encoder sent by name (`named`,
** sorted: a module table, a shared function), which the walk does not
** enter. A C function is its address: it crosses by name.
**
** Anything else (userdata, a thread, a lazy table, a closure that might be
** shared, a walk too deep or too long) stops the walk with 0: the caller
** then encodes as always. Only reads, but for the pins of a recording
** walk (`pins`), stored in a table the caller made room for.
*/
#include <string.h>

#include "lstate.h"
#include "lobject.h"
#include "ltable.h"
#include "lfunc.h"
#include "lapi.h"

#include "version.h"

/* Keep in step with `Walk` in src/vm/codec/memo.rs. */
typedef struct SynodicWalk {
  const void *const *named; /* sorted */
  size_t nnamed;
  int pins;                 /* a recording walk: the stack index of its pin table (0: checking) */
  int npins;
  uint64_t *out;            /* recording: the words (`cap` of room) */
  const uint64_t *expect;   /* checking: the words recorded */
  size_t len, cap;
  const void **objects;     /* the tables (address | 1) and closures numbered, in order */
  size_t nobjects, objcap;
  const void **cells;       /* the upvalue cells met, in order */
  size_t ncells, cellcap;
  const Table *globals;     /* the state's global table (the walk sets it) */
} SynodicWalk;

enum {
  F_NIL = 1, F_FALSE, F_TRUE, F_INT, F_FLT, F_STR, F_CFN, F_GLOBALS, F_NAMED, F_REF,
  F_TABLE, F_SLOT, F_CLOSURE, F_UPREF
};

/* Deeper than this, the encoder is left to say what it thinks. */
#define MAX_WALK_DEPTH 16

int synodic_maybe_frozen (const void *o);  /* shared.c */

/* Records or checks one word. */
static int put (SynodicWalk *w, uint64_t x) {
  if (w->len == w->cap) return 0;
  if (w->out != NULL) w->out[w->len] = x;
  else if (w->expect[w->len] != x) return 0;
  w->len++;
  return 1;
}

static int put2 (SynodicWalk *w, uint64_t a, uint64_t b) {
  return put(w, a) && put(w, b);
}

/* A recording walk keeps the object `o` alive as long as its record. */
static void pin (lua_State *L, SynodicWalk *w, const TValue *o) {
  if (w->pins == 0) return;
  setobj2s(L, L->top.p, o);
  api_incr_top(L);
  lua_rawseti(L, w->pins, ++w->npins);
}

static int is_named (const SynodicWalk *w, const void *p) {
  size_t lo = 0, hi = w->nnamed;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (w->named[mid] == p) return 1;
    if ((uintptr_t)w->named[mid] < (uintptr_t)p) lo = mid + 1; else hi = mid;
  }
  return 0;
}

/* The position of `p` in `list`, or -1. */
static long position (const void *const *list, size_t n, const void *p) {
  size_t i;
  for (i = 0; i < n; i++)
    if (list[i] == p) return (long)i;
  return -1;
}

static int value (lua_State *L, SynodicWalk *w, const TValue *o, int depth);

/* Numbers an object met for the first time; 0 when there are too many. */
static int number (SynodicWalk *w, const void *p) {
  if (w->nobjects == w->objcap) return 0;
  w->objects[w->nobjects++] = p;
  return 1;
}

static int table (lua_State *L, SynodicWalk *w, const TValue *o, int depth) {
  Table *t = hvalue(o);
  const void *tagged = (const void *)((uintptr_t)t | 1);
  unsigned int i, asize;
  size_t j, nsize;
  long seen;
  if (t == w->globals) return put(w, F_GLOBALS);
  if (is_named(w, t)) {
    pin(L, w, o);
    return put2(w, F_NAMED, (uintptr_t)t);
  }
  seen = position(w->objects, w->nobjects, tagged);
  if (seen >= 0) return put2(w, F_REF, (uint64_t)seen);
  if (isLazy(t) || depth >= MAX_WALK_DEPTH || !number(w, tagged)) return 0;
  asize = luaH_realasize(t);
  nsize = isdummy(t) ? 0 : sizenode(t);
  if (!put2(w, F_TABLE, (uint64_t)luaH_getn(t)) || !put2(w, asize, nsize)) return 0;
  for (i = 0; i < asize; i++)
    if (!value(L, w, &t->array[i], depth + 1)) return 0;
  for (j = 0; j < nsize; j++) {
    Node *n = gnode(t, j);
    TValue key;
    if (isempty(gval(n))) continue;
    getnodekey(L, &key, n);
    if (!put2(w, F_SLOT, j) || !value(L, w, &key, depth + 1) || !value(L, w, gval(n), depth + 1)) return 0;
  }
  return 1;
}

static int closure (lua_State *L, SynodicWalk *w, const TValue *o, int depth) {
  LClosure *cl = clLvalue(o);
  long seen;
  int i;
  if (is_named(w, cl)) {
    pin(L, w, o);
    return put2(w, F_NAMED, (uintptr_t)cl);
  }
  /* One the node shares may cross by a name the walk cannot see. */
  if (synodic_maybe_frozen(cl) || synodic_maybe_frozen(cl->p)) return 0;
  seen = position(w->objects, w->nobjects, cl);
  if (seen >= 0) return put2(w, F_REF, (uint64_t)seen);
  if (depth >= MAX_WALK_DEPTH || !number(w, cl)) return 0;
  pin(L, w, o); /* and so its prototype */
  if (!put2(w, F_CLOSURE, (uintptr_t)cl->p) || !put(w, (uint64_t)cl->nupvalues)) return 0;
  for (i = 0; i < cl->nupvalues; i++) {
    UpVal *uv = cl->upvals[i];
    if (uv == NULL) return 0;
    seen = position(w->cells, w->ncells, uv);
    if (seen >= 0) {
      if (!put2(w, F_UPREF, (uint64_t)seen)) return 0;
      continue;
    }
    if (w->ncells == w->cellcap) return 0;
    w->cells[w->ncells++] = uv;
    if (!value(L, w, uv->v.p, depth + 1)) return 0;
  }
  return 1;
}

static int value (lua_State *L, SynodicWalk *w, const TValue *o, int depth) {
  if (ttisnil(o)) return put(w, F_NIL);
  switch (ttypetag(o)) {
    case LUA_VFALSE: return put(w, F_FALSE);
    case LUA_VTRUE: return put(w, F_TRUE);
    case LUA_VNUMINT: return put2(w, F_INT, (uint64_t)ivalue(o));
    case LUA_VNUMFLT: {
      lua_Number n = fltvalue(o);
      uint64_t bits;
      memcpy(&bits, &n, sizeof bits);
      return put2(w, F_FLT, bits);
    }
    case LUA_VSHRSTR: case LUA_VLNGSTR:
      pin(L, w, o);
      return put2(w, F_STR, (uintptr_t)tsvalue(o));
    case LUA_VLCF: return put2(w, F_CFN, (uintptr_t)fvalue(o));
    case LUA_VCCL:
      pin(L, w, o);
      return put2(w, F_CFN, (uintptr_t)clCvalue(o));
    case LUA_VTABLE: return table(L, w, o, depth);
    case LUA_VLCL: return closure(L, w, o, depth);
    default: return 0;
  }
}

/* Walks the `count` values from stack index `first` (absolute), recording
** (w->out) or checking (w->expect) their words; 1 when the walk went
** through (and, checking, found every word as recorded). A recording walk
** needs one free stack slot above the pin table. */
int synodic_fingerprint (lua_State *L, int first, int count, SynodicWalk *w) {
  /* Through luaH_getint, as peek.c's synodic_object: the registry's slots
  ** may have been changed. */
  const TValue *globals = luaH_getint(hvalue(&G(L)->l_registry), LUA_RIDX_GLOBALS);
  int i;
  w->globals = ttistable(globals) ? hvalue(globals) : NULL;
  for (i = 0; i < count; i++) {
    StkId o = L->ci->func.p + first + i;
    if (first + i <= 0 || o >= L->top.p || !value(L, w, s2v(o), 0)) return 0;
  }
  return w->out != NULL || w->len == w->cap;
}
