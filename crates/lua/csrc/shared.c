/*
** shared.c: the strings and function prototypes every Lua state of a node
** shares (the [Synodic] SharedStrings of lstring.h), on the embedder's side.
** One state compiles what every process may run (Synodic's bundled modules)
** and is then frozen: each of its objects is made gray and old for good, so
** the collector of any state that reaches one (through a closure over a
** shared prototype, or a value that is a shared string) leaves it alone,
** and its string table is published for states created afterwards. The
** frozen state never runs again; nothing in it is ever written. Building it
** is src/shared.rs; only what needs Lua's internals is here.
*/
#include <string.h>

#include "lstate.h"
#include "lgc.h"
#include "lfunc.h"
#include "lobject.h"
#include "lstring.h"
#include "ltable.h"
#include "llex.h"

#include "version.h"

static SharedStrings shared;

/* As lgc.c's set2gray (private there): neither white nor black. */
#define make_gray(o) resetbits((o)->marked, bitmask(BLACKBIT) | WHITEBITS)

static void freeze_list (GCObject *o) {
  for (; o != NULL; o = o->next) {
    if (o->tt == LUA_VLNGSTR)
      luaS_hashlongstr(gco2ts(o));  /* a later first hash would write it */
    make_gray(o);
    setage(o, G_OLD);
  }
}

/* Freezes L, whose collector is stopped, and publishes its strings: from
** now on, new states share them. L must never run again. Once per process. */
void synodic_share (lua_State *L) {
  global_State *g = G(L);
  if (!g->lexready)
    luaX_init(L);  /* the reserved words, marked for every state's lexer */
  freeze_list(g->allgc);
  freeze_list(g->fixedgc);
  freeze_list(g->finobj);
  shared.hash = g->strt.hash;
  shared.size = g->strt.size;
  shared.seed = g->seed;
  shared.memerrmsg = g->memerrmsg;
  memcpy(shared.tmname, g->tmname, sizeof(shared.tmname));
  __atomic_store_n(&luaS_sharedstrings, &shared, __ATOMIC_RELEASE);
}

/* The prototype of the Lua function at stack index idx. */
const void *synodic_proto_of (lua_State *L, int idx) {
  const TValue *o = (idx > 0) ? s2v(L->ci->func.p + idx) : s2v(L->top.p + idx);
  return ttisLclosure(o) ? clLvalue(o)->p : NULL;
}

static void walk_protos (const Proto *p, const void **out, size_t cap, size_t *n) {
  int i;
  if (*n < cap)
    out[*n] = p;
  (*n)++;
  for (i = 0; i < p->sizep; i++)
    walk_protos(p->p[i], out, cap, n);
}

/* Writes the prototypes of the tree under proto (itself first) to out, up
** to cap of them; returns how many there are. */
size_t synodic_proto_tree (const void *proto, const void **out, size_t cap) {
  size_t n = 0;
  walk_protos((const Proto *)proto, out, cap, &n);
  return n;
}

/* Pushes a new closure of the shared main-chunk prototype p, its first
** upvalue the globals (as lua_load does). May raise a memory error. */
void synodic_push_shared (lua_State *L, const void *proto) {
  Proto *p = (Proto *)proto;
  LClosure *cl = luaF_newLclosure(L, p->sizeupvalues);
  cl->p = p;
  setclLvalue2s(L, L->top.p, cl);
  L->top.p++;
  luaF_initupvals(L, cl);
  if (cl->nupvalues >= 1) {
    const TValue *gt = &hvalue(&G(L)->l_registry)->array[LUA_RIDX_GLOBALS - 1];
    setobj(L, cl->upvals[0]->v.p, gt);
    luaC_barrier(L, cl->upvals[0], gt);
  }
}
