/*
** gc.c: when a new state's collector first runs.
**
** Lua starts a state with no allocation allowance: its collector takes its
** first step on the first allocation after creation, and walks the whole
** new state (~4,000 instructions), though almost none of it is garbage yet.
** Most processes are short or allocate little; giving a new state an
** allowance lets it run (and, for many, end) before the first collection.
** Lua's API can stop and restart the collector but not set the allowance,
** hence C and the internal header.
*/
#include "lstate.h"

/* The collector's next step comes after `bytes` more bytes are allocated. */
void synodic_gc_allowance(lua_State *L, size_t bytes) {
  luaE_setdebt(G(L), -(l_mem)bytes);
}
