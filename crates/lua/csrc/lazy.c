/*
** lazy.c: the vendored Lua's lazy tables (the [Synodic] hooks declared in
** ltable.h), on the embedder's side. A lazy table's missing entries are made
** by a C function of the embedder, called as a metamethod would be, with the
** table and the key; which keys are entries still to be made, the embedder
** decides (src/lazy.rs, the same for every table of a state). Only stack
** juggling that needs Lua's internals is here.
*/
#include "lstate.h"
#include "ltable.h"
#include "ldo.h"
#include "lobject.h"
#include "lstring.h"

#include "version.h"

/* src/lazy.rs */
int synodic_lazy_entry (lua_State *L, const void *t, const char *key, size_t len, int claim);
int synodic_lazy_make (lua_State *L);      /* (t, key) -> the entry, made and stored */
int synodic_lazy_make_all (lua_State *L);  /* (t) -> nothing */

static int is_entry (lua_State *L, Table *t, const TValue *key, int claim) {
  TString *k;
  if (!ttisshrstring(key)) return 0;
  k = tsvalue(key);
  return synodic_lazy_entry(L, t, getstr(k), k->shrlen, claim);
}

int synodic_lazy_claim (lua_State *L, Table *t, const TValue *key) {
  return is_entry(L, t, key, 1);
}

/* Calls 'f(t [, key])' with 'nres' results, as 'luaT_callTMres' calls a
** metamethod: the arguments go above the top (EXTRA_STACK has room). */
static void call (lua_State *L, lua_CFunction f, Table *t, const TValue *key, int nres) {
  StkId func = L->top.p;
  setfvalue(s2v(func), f);
  sethvalue2s(L, func + 1, t);
  L->top.p = func + 2;
  if (key != NULL) {
    setobj2s(L, func + 2, key);
    L->top.p++;
  }
  if (isLuacode(L->ci))
    luaD_call(L, func, nres);
  else
    luaD_callnoyield(L, func, nres);
}

int synodic_lazy_get (lua_State *L, Table *t, const TValue *key, StkId res) {
  ptrdiff_t result;
  if (!is_entry(L, t, key, 0)) return 0;
  result = savestack(L, res);
  call(L, synodic_lazy_make, t, key, 1);
  res = restorestack(L, result);  /* the stack may have moved */
  setobjs2s(L, res, --L->top.p);
  return 1;
}

void synodic_lazy_fill (lua_State *L, Table *t) {
  call(L, synodic_lazy_make_all, t, NULL, 0);
}

/* Makes the table at 'idx' lazy, or ends its laziness. */
void synodic_lazy_mark (lua_State *L, int idx, int lazy) {
  Table *t = hvalue(s2v(L->ci->func.p + idx));
  if (lazy)
    t->flags |= BITLAZY;
  else
    t->flags &= cast_byte(~BITLAZY);
}

/* lua_next without making a lazy table's entries first (for the codec,
** which looks for module tables by identity and must not build them all). */
int synodic_next_raw (lua_State *L, int idx) {
  Table *t = hvalue(s2v(L->ci->func.p + idx));
  int more = luaH_next(L, t, L->top.p - 1);
  if (more)
    L->top.p++;
  else
    L->top.p--;
  return more;
}

/* Pops the table on top of L's stack, a new state's: the string library,
** the string metatable's __index once the state makes it (ltm.h). The
** table stays alive as a root of the collector until then. */
void synodic_string_index (lua_State *L) {
  G(L)->strmtindex = hvalue(s2v(L->top.p - 1));
  L->top.p--;
}
