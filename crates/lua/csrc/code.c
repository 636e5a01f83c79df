/*
** code.c: the code a prefix template's copies share (src/vm/template_code.rs).
** A spawn's leading values (an entity's code) hold Lua functions; their
** prototypes, loaded once into a state of their own that shares the node's
** strings, are frozen as the node's shared code is (shared.c), and every
** copy of the template holds closures over them instead of prototypes of
** its own. The strings those prototypes hold that the node does not share
** stay in the frozen state's table, which a copy looks up after the node's
** and before its own ([Synodic] 'codestrings' in lstate.h and lstring.c):
** a string a copy makes is then the prototype's, as Lua's equality needs.
*/
#include <stdlib.h>
#include <string.h>

#include "lstate.h"
#include "lstring.h"

#include "version.h"

/* The string table of L (a frozen code state) as a table other states may
** look strings up in; NULL when out of memory. Kept for good. */
const SharedStrings *synodic_code_strings (lua_State *L) {
  global_State *g = G(L);
  SharedStrings *sh = (SharedStrings *)calloc(1, sizeof(SharedStrings));
  if (sh == NULL) return NULL;
  sh->hash = g->strt.hash;
  sh->size = g->strt.size;
  sh->seed = g->seed;
  return sh;
}

/* L looks strings up in the code strings sh too (made with the same seed:
** both share the node's strings) from now on. */
void synodic_use_code_strings (lua_State *L, const SharedStrings *sh) {
  lua_assert(sh == NULL || sh->seed == G(L)->seed);
  G(L)->codestrings = sh;
}

/* Whether no string of L's own table is also among its code strings: a
** string made before L looked there would have two addresses. */
int synodic_code_strings_apart (lua_State *L) {
  global_State *g = G(L);
  const SharedStrings *sh = g->codestrings;
  int i;
  if (sh == NULL) return 1;
  for (i = 0; i < g->strt.size; i++) {
    const TString *ts;
    for (ts = g->strt.hash[i]; ts != NULL; ts = ts->u.hnext) {
      const TString *c;
      for (c = sh->hash[lmod(ts->hash, sh->size)]; c != NULL; c = c->u.hnext)
        if (c->shrlen == ts->shrlen && memcmp(getshrstr(c), getshrstr(ts), ts->shrlen) == 0)
          return 0;
    }
  }
  return 1;
}
