/*
** template.c: what src/template.rs needs to know about a Lua state it
** would copy to another address. A copy moves every object by the same
** distance, and src/template.rs finds and moves the pointers; what no
** moving of pointers can fix is a table slot whose place depends on an
** object's address (a key that is a table, a function, a userdata or a
** thread, or a light userdata into the state's memory: Lua hashes those
** by address), and a state not at rest (a call in progress, an open
** upvalue). This file checks for both.
*/
#include "lstate.h"
#include "lobject.h"
#include "ltable.h"

#include "version.h"

/* Whether the key of node n is placed by an address within [lo, hi). */
static int placed_by_address (const Node *n, const char *lo, const char *hi) {
  if (keyisnil(n) || keyisshrstr(n) || keytt(n) == ctb(LUA_VLNGSTR))
    return 0;
  if (keyiscollectable(n))
    return 1;  /* the object moves with the copy */
  if (keytt(n) == LUA_VLIGHTUSERDATA) {
    const char *p = (const char *)n->u.key_val.p;
    return lo <= p && p < hi;
  }
  return 0;
}

static int list_movable (GCObject *o, const char *lo, const char *hi) {
  for (; o != NULL; o = o->next) {
    if (o->tt == LUA_VTABLE) {
      Table *t = gco2t(o);
      unsigned int i, size = sizenode(t);
      if (isdummy(t))
        continue;
      for (i = 0; i < size; i++)
        if (placed_by_address(gnode(t, i), lo, hi))
          return 0;
    }
  }
  return 1;
}

/* Whether L, whose objects lie in [lo, hi), may be copied elsewhere with
** its pointers moved: it is at rest (no call in progress, no open upvalue,
** nothing on its stack but `values` values) and no table of it places a
** key by address. */
int synodic_state_movable (lua_State *L, int values, const char *lo, const char *hi) {
  global_State *g = G(L);
  if (L->ci != &L->base_ci || L->top.p != L->stack.p + 1 + values || L->openupval != NULL)
    return 0;
  if (g->mainthread != L || g->tobefnz != NULL)
    return 0;
  return list_movable(g->allgc, lo, hi) && list_movable(g->finobj, lo, hi)
      && list_movable(g->fixedgc, lo, hi);
}

/* Where the state keeps its allocator's user data (set anew in a copy). */
void *synodic_alloc_ud_slot (lua_State *L) {
  return &G(L)->ud;
}
