/*
** peek.c: what a stack value is, and its contents, in one call (and the
** prototype of a Lua function, which the dump cache is keyed by).
**
** Every message a process sends goes through the codec's short path, which
** asks of each value its type and then its contents: through Lua's API that
** is two or three calls (lua_type, lua_isinteger, lua_tointegerx, ...), each
** of which resolves the index again. Reading the value's tag directly costs
** less than one of them. Needs Lua's internal headers, hence C. Only stack
** indices are read here (not pseudo-indices); anything else is reported as
** SYNODIC_OTHER, and the caller falls back to the API.
*/
#include "lstate.h"
#include "lobject.h"
#include "ltable.h"

#include "version.h"

/* Keep in step with `Kind` in src/peek.rs. */
enum {
  SYNODIC_OTHER = 0,
  SYNODIC_NIL = 1,
  SYNODIC_FALSE = 2,
  SYNODIC_TRUE = 3,
  SYNODIC_INT = 4,
  SYNODIC_FLOAT = 5,
  SYNODIC_STRING = 6,
  SYNODIC_LIGHT = 7
};

typedef struct SynodicValue {
  lua_Integer i;     /* SYNODIC_INT */
  lua_Number n;      /* SYNODIC_FLOAT */
  const void *p;     /* SYNODIC_STRING: the bytes; SYNODIC_LIGHT: the pointer */
  size_t len;        /* SYNODIC_STRING */
} SynodicValue;

static const TValue *stack_value(lua_State *L, int idx) {
  if (idx > 0) {
    StkId o = L->ci->func.p + idx;
    return o < L->top.p ? s2v(o) : NULL;
  }
  if (idx < 0 && idx > LUA_REGISTRYINDEX && -idx <= L->top.p - (L->ci->func.p + 1))
    return s2v(L->top.p + idx);
  return NULL;
}

/* The kind of the value at `idx` (0 when it is none of the plain kinds, or
** `idx` is not a stack index), with its contents in `*out`. */
int synodic_peek(lua_State *L, int idx, SynodicValue *out) {
  const TValue *o = stack_value(L, idx);
  if (o == NULL) return SYNODIC_OTHER;
  switch (ttypetag(o)) {
    case LUA_VNIL: return SYNODIC_NIL;
    case LUA_VFALSE: return SYNODIC_FALSE;
    case LUA_VTRUE: return SYNODIC_TRUE;
    case LUA_VNUMINT: out->i = ivalue(o); return SYNODIC_INT;
    case LUA_VNUMFLT: out->n = fltvalue(o); return SYNODIC_FLOAT;
    case LUA_VSHRSTR: case LUA_VLNGSTR: {
      TString *ts = tsvalue(o);
      out->p = getstr(ts);
      out->len = tsslen(ts);
      return SYNODIC_STRING;
    }
    case LUA_VLIGHTUSERDATA: out->p = pvalue(o); return SYNODIC_LIGHT;
    default: return SYNODIC_OTHER;
  }
}

/* The prototype of the Lua function at stack index `idx` (NULL for anything
** else): what two closures of the same code share, whatever their upvalues. */
const void *synodic_proto(lua_State *L, int idx) {
  const TValue *o = stack_value(L, idx);
  return (o != NULL && ttisLclosure(o)) ? (const void *)clLvalue(o)->p : NULL;
}

/* How many upvalues the Lua function at stack index `idx` has (0 for
** anything else): what counting them through lua_getupvalue finds, in one
** call rather than one per upvalue and one more. */
int synodic_upvalue_count(lua_State *L, int idx) {
  const TValue *o = stack_value(L, idx);
  return (o != NULL && ttisLclosure(o)) ? clLvalue(o)->nupvalues : 0;
}

/* Keep in step with `Object` in src/peek.rs. */
enum {
  SYNODIC_OBJ_OTHER = 0,
  SYNODIC_OBJ_TABLE = 1,
  SYNODIC_OBJ_GLOBALS = 2,
  SYNODIC_OBJ_LUA_FUNCTION = 3,
  SYNODIC_OBJ_C_FUNCTION = 4
};

/* What the encoder asks of a table or function at stack index `idx`, in
** one call: which it is (the global table apart, which crosses by name),
** and in `*p` its address as lua_topointer gives it. 0 for anything else,
** or an index that is not a stack slot. */
int synodic_object(lua_State *L, int idx, const void **p) {
  const TValue *o = stack_value(L, idx);
  if (o == NULL) return SYNODIC_OBJ_OTHER;
  switch (ttypetag(o)) {
    case LUA_VTABLE: {
      /* Through luaH_getint: code with the debug library may have changed
      ** the registry's slots, and even its array's size. */
      const TValue *globals = luaH_getint(hvalue(&G(L)->l_registry), LUA_RIDX_GLOBALS);
      *p = hvalue(o);
      return ttistable(globals) && hvalue(globals) == hvalue(o) ? SYNODIC_OBJ_GLOBALS : SYNODIC_OBJ_TABLE;
    }
    case LUA_VLCL: *p = clLvalue(o); return SYNODIC_OBJ_LUA_FUNCTION;
    case LUA_VLCF: *p = cast_voidp(cast_sizet(fvalue(o))); return SYNODIC_OBJ_C_FUNCTION;
    case LUA_VCCL: *p = clCvalue(o); return SYNODIC_OBJ_C_FUNCTION;
    default: return SYNODIC_OBJ_OTHER;
  }
}
