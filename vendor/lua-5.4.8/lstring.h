/*
** $Id: lstring.h $
** String table (keep all strings handled by Lua)
** See Copyright Notice in lua.h
*/

#ifndef lstring_h
#define lstring_h

#include "lgc.h"
#include "lobject.h"
#include "lstate.h"


/*
** Memory-allocation error message must be preallocated (it cannot
** be created after memory is exhausted)
*/
#define MEMERRMSG       "not enough memory"


/*
** Size of a TString: Size of the header plus space for the string
** itself (including final '\0').
*/
#define sizelstring(l)  (offsetof(TString, contents) + ((l) + 1) * sizeof(char))

#define luaS_newliteral(L, s)	(luaS_newlstr(L, "" s, \
                                 (sizeof(s)/sizeof(char))-1))


/*
** test whether a string is a reserved word
*/
#define isreserved(s)	((s)->tt == LUA_VSHRSTR && (s)->extra > 0)


/*
** equality for short strings, which are always internalized
*/
#define eqshrstr(a,b)	check_exp((a)->tt == LUA_VSHRSTR, (a) == (b))


/*
** [Synodic] Strings every state of a node shares, with the function
** prototypes that use them (crates/lua/csrc/shared.c): the string table of
** one state that never runs again, frozen (its objects are gray and old
** forever, so no collector marks, traverses or frees them) and read by all.
** A state created once it is published hashes with its seed and looks a
** short string up there before its own table, so a string still has one
** address in a state, as Lua's equality needs. States made before keep to
** their own strings.
** A state may also share the code of its template (the functions a spawn
** carries, loaded once: crates/lua/csrc/code.c), frozen the same way: its
** 'codestrings' are looked up after the node's and before its own.
*/
typedef struct SharedStrings {
  TString **hash;  /* the frozen state's string table */
  int size;
  unsigned int seed;  /* what its strings were hashed with */
  TString *memerrmsg;
  TString *tmname[TM_N];
} SharedStrings;

LUAI_DDEC(const SharedStrings *luaS_sharedstrings;)  /* NULL until published */

LUAI_FUNC unsigned int luaS_hash (const char *str, size_t l, unsigned int seed);
LUAI_FUNC unsigned int luaS_hashlongstr (TString *ts);
LUAI_FUNC int luaS_eqlngstr (TString *a, TString *b);
LUAI_FUNC void luaS_resize (lua_State *L, int newsize);
LUAI_FUNC void luaS_clearcache (global_State *g);
LUAI_FUNC void luaS_init (lua_State *L);
LUAI_FUNC void luaS_remove (lua_State *L, TString *ts);
LUAI_FUNC Udata *luaS_newudata (lua_State *L, size_t s, int nuvalue);
LUAI_FUNC TString *luaS_newlstr (lua_State *L, const char *str, size_t l);
LUAI_FUNC TString *luaS_new (lua_State *L, const char *str);
LUAI_FUNC TString *luaS_createlngstrobj (lua_State *L, size_t l);


#endif
