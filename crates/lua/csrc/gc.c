/*
** gc.c: the collector at the two ends of a state's life.
**
** Start: Lua starts a state with no allocation allowance: its collector
** takes its first step on the first allocation after creation, and walks the
** whole new state (~4,000 instructions), though almost none of it is
** garbage yet. Most processes are short or allocate little; giving a new
** state an allowance lets it run (and, for many, end) before the first
** collection.
**
** End: closing a state frees its objects one by one (~5,000 instructions
** for a small process), though the process's heap is about to be dropped
** whole. All that a close does beyond freeing memory is run finalizers
** (`__gc`) and pending to-be-closed variables; a state with neither can be
** dropped without it.
**
** Lua's API can say neither, hence C and the internal headers.
*/
#include "lstate.h"

#include "version.h"

/* The collector's next step comes after `bytes` more bytes are allocated. */
void synodic_gc_allowance(lua_State *L, size_t bytes) {
  luaE_setdebt(G(L), -(l_mem)bytes);
}

/* Whether closing `L` would run code: a finalizer of some object, or a
** to-be-closed variable still pending on the main thread's stack. */
int synodic_close_runs_code(lua_State *L) {
  global_State *g = G(L);
  lua_State *main = g->mainthread;
  return g->finobj != NULL || g->tobefnz != NULL || main->tbclist.p != main->stack.p;
}
