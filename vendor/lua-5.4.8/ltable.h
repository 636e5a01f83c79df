/*
** $Id: ltable.h $
** Lua tables (hash)
** See Copyright Notice in lua.h
*/

#ifndef ltable_h
#define ltable_h

#include "lobject.h"


#define gnode(t,i)	(&(t)->node[i])
#define gval(n)		(&(n)->i_val)
#define gnext(n)	((n)->u.next)


/*
** Clear all bits of fast-access metamethods, which means that the table
** may have any of these metamethods. (First access that fails after the
** clearing will set the bit again.)
*/
#define invalidateTMcache(t)	((t)->flags &= ~maskflags)


/* true when 't' is using 'dummynode' as its hash part */
#define isdummy(t)		((t)->lastfree == NULL)


/* allocated size for hash nodes */
#define allocsizenode(t)	(isdummy(t) ? 0 : sizenode(t))


/* returns the Node, given the value of a table entry */
#define nodefromval(v)	cast(Node *, (v))


LUAI_FUNC const TValue *luaH_getint (Table *t, lua_Integer key);
LUAI_FUNC void luaH_setint (lua_State *L, Table *t, lua_Integer key,
                                                    TValue *value);
LUAI_FUNC const TValue *luaH_getshortstr (Table *t, TString *key);

/*
** [Synodic] Lazy tables. The embedder fills in some entries of a table the
** first time they are asked for, so that a state need not build every
** library up front, and no program can tell: a missing entry is made by a
** read (luaV_finishget, before any '__index'; lua_rawget), claimed by a write
** (luaH_finishset), and every entry is made before a traversal (lua_next).
** Only accesses that miss pay a test of the flag.
*/
#define BITLAZY		(1 << 6)
#define isLazy(t)	((t)->flags & BITLAZY)

#if defined(LUAI_SYNODIC)
/* Makes 't[key]' into 'res' if it is an entry still to be made; 0 if not. */
int synodic_lazy_get (lua_State *L, Table *t, const TValue *key, StkId res);
/* 't[key]' is being written: an entry still to be made is not made any more;
** 1 if it was one. */
int synodic_lazy_claim (lua_State *L, Table *t, const TValue *key);
/* Makes every entry still to be made, and ends the table's laziness. */
void synodic_lazy_fill (lua_State *L, Table *t);
#else
#define synodic_lazy_get(L,t,k,r)	0
#define synodic_lazy_claim(L,t,k)	0
#define synodic_lazy_fill(L,t)	((void)0)
#endif
LUAI_FUNC const TValue *luaH_getstr (Table *t, TString *key);
LUAI_FUNC const TValue *luaH_get (Table *t, const TValue *key);
LUAI_FUNC void luaH_set (lua_State *L, Table *t, const TValue *key,
                                                 TValue *value);
LUAI_FUNC void luaH_finishset (lua_State *L, Table *t, const TValue *key,
                                       const TValue *slot, TValue *value);
LUAI_FUNC Table *luaH_new (lua_State *L);
LUAI_FUNC void luaH_resize (lua_State *L, Table *t, unsigned int nasize,
                                                    unsigned int nhsize);
LUAI_FUNC void luaH_resizearray (lua_State *L, Table *t, unsigned int nasize);
LUAI_FUNC void luaH_free (lua_State *L, Table *t);
LUAI_FUNC int luaH_next (lua_State *L, Table *t, StkId key);
LUAI_FUNC lua_Unsigned luaH_getn (Table *t);
LUAI_FUNC unsigned int luaH_realasize (const Table *t);


#if defined(LUA_DEBUG)
LUAI_FUNC Node *luaH_mainposition (const Table *t, const TValue *key);
#endif


#endif
