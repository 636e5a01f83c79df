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
**
** Modules compiled later (on their first require) go into a loader state
** that shares those strings: the node's state interned, before freezing,
** every string the bundled bytecode holds, so a load there makes no string
** of its own, and its prototypes can be frozen and shared in turn.
*/
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lstate.h"
#include "lgc.h"
#include "lfunc.h"
#include "lobject.h"
#include "lstring.h"
#include "ltable.h"
#include "llex.h"
#include "lopcodes.h"

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

/* Interns the strings listed in buf (each a length byte and its bytes)
** into L, whose collector is stopped, so that they stay. May raise a
** memory error. */
void synodic_intern_strings (lua_State *L, const unsigned char *buf, size_t len) {
  size_t at = 0, count = 0;
  int size = G(L)->strt.size;
  /* The string table sized once for them all, not doubled (and rehashed)
  ** five times on the way. */
  while (at < len) {
    at += 1 + buf[at];
    count++;
  }
  while ((size_t)size < (size_t)G(L)->strt.nuse + count && size < (1 << 24))
    size *= 2;
  if (size > G(L)->strt.size)
    luaS_resize(L, size);
  at = 0;
  while (at < len) {
    size_t n = buf[at++];
    if (n > len - at) break;
    luaS_newlstr(L, (const char *)buf + at, n);
    at += n;
  }
}

/* How many strings L holds of its own (not the node's shared ones). */
int synodic_own_strings (lua_State *L) {
  return G(L)->strt.nuse;
}

/* Freezes what L (a loader state, whose collector is stopped and whose
** strings are all shared) has made so far: its prototypes may then be
** shared as the node state's are. L may run again. */
void synodic_freeze_loaded (lua_State *L) {
  global_State *g = G(L);
  /* No emergency collection either (a memory error in a later load would
  ** run one): its sweep would turn frozen objects white again. */
  g->gcstopem = 1;
  freeze_list(g->allgc);
  freeze_list(g->fixedgc);
  freeze_list(g->finobj);
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

/* Whether the collectable object o could be one the node shares: every
** frozen object is gray and old, which a process's own object seldom is
** (so the lists of shared objects are searched seldom). */
int synodic_maybe_frozen (const void *o) {
  const GCObject *g = (const GCObject *)o;
  return o != NULL && isgray(g) && getage(g) == G_OLD;
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

/*
** Frozen modules: a bundled module whose main chunk ran in a state that
** shares the node's strings (the loader's: vm::loader), then frozen, and
** whose functions (closures, with their
** upvalues) every process then shares as they are, as it shares code.
** A process never writes them: the check below admits only closures that
** assign no upvalue and make no closures, and whose upvalues hold values
** that are the same in every state (no table, no userdata, no C closure),
** and the debug library refuses to change their upvalues (ldblib.c).
** A frozen module may also hold read-only tables (classes: see
** shareable_table), which the embedder gives out only as metatables.
** The C API's lua_setupvalue and lua_upvaluejoin are not guarded: the
** embedder applies them only to functions it has just made (decoding).
*/

#define MAX_FROZEN 256

/* The frozen set: sorted addresses. Frozen modules are frozen on the first
** require of one (vm::loader), while processes run and read the set (the
** debug library's checks, on any thread), so a new set is built beside the
** published one and then published whole: a reader sees the old set or the
** new one. One writer at a time (under the loader's lock). A replaced set
** is never freed, as a reader may still be searching it: a set is
** published once per frozen module (three), 2 KB each. */
typedef struct FrozenSet {
  int n;
  const void *p[MAX_FROZEN];
} FrozenSet;

static _Atomic(const FrozenSet *) frozen_set = NULL;

static int is_frozen (const void *p) {
  const FrozenSet *set = atomic_load_explicit(&frozen_set, memory_order_acquire);
  int lo = 0, hi;
  if (set == NULL) return 0;
  hi = set->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (set->p[mid] == p) return 1;
    if ((const char *)set->p[mid] < (const char *)p) lo = mid + 1;
    else hi = mid - 1;
  }
  return 0;
}

/* Whether p is a function that the node's processes share. */
int synodic_is_frozen (const void *p) {
  return p != NULL && is_frozen(p);
}

static int frozen_count (void) {
  const FrozenSet *set = atomic_load_explicit(&frozen_set, memory_order_acquire);
  return set == NULL ? 0 : set->n;
}

/* Publishes the set with the n addresses of add besides (the caller has
** checked there is room); 0 when out of memory (nothing published). */
static int add_frozen (const void *const *add, int n) {
  const FrozenSet *old = atomic_load_explicit(&frozen_set, memory_order_relaxed);
  FrozenSet *set = (FrozenSet *)malloc(sizeof(FrozenSet));
  int i, j;
  if (set == NULL) return 0;
  set->n = 0;
  if (old != NULL) {
    memcpy(set->p, old->p, old->n * sizeof(old->p[0]));
    set->n = old->n;
  }
  for (j = 0; j < n; j++) {
    for (i = set->n; i > 0 && (const char *)set->p[i - 1] > (const char *)add[j]; i--)
      set->p[i] = set->p[i - 1];
    set->p[i] = add[j];
    set->n++;
  }
  atomic_store_explicit(&frozen_set, set, memory_order_release);
  return 1;
}

/* The closures a check has admitted so far: recorded as frozen only if
** the whole module is (so a refused check writes nothing shared). */
typedef struct Admitted {
  const void *p[MAX_FROZEN];
  int n;
  lua_State *L;  /* the state being frozen, for its names */
} Admitted;

static int admitted (const Admitted *a, const void *p) {
  int i;
  for (i = 0; i < a->n; i++)
    if (a->p[i] == p) return 1;
  return 0;
}

static int shareable (const TValue *v, Admitted *a, int tables);

/* Whether short string ts is one of the node's: every state finds it at
** this address. Before the node's strings are published (the node's state
** freezing its own modules), all of that state's strings will be. */
static int node_string (const TString *ts) {
  const TString *s;
  if (shared.hash == NULL) return 1;
  for (s = shared.hash[lmod(ts->hash, shared.size)]; s != NULL; s = s->u.hnext)
    if (s == ts) return 1;
  return 0;
}

/* Whether closure cl may be shared (admitting it, and the closures its
** upvalues hold). */
static int shareable_closure (LClosure *cl, Admitted *a) {
  const Proto *p = cl->p;
  int i;
  if (is_frozen(cl) || admitted(a, cl)) return 1;
  if (p->sizep != 0) return 0;  /* its closures would share its upvalues */
  for (i = 0; i < p->sizecode; i++)
    if (GET_OPCODE(p->code[i]) == OP_SETUPVAL) return 0;
  if (a->n == MAX_FROZEN) return 0;
  a->p[a->n++] = cl;
  for (i = 0; i < cl->nupvalues; i++) {
    UpVal *uv = cl->upvals[i];
    if (uv == NULL || upisopen(uv) || !shareable(uv->v.p, a, 0)) return 0;
  }
  return 1;
}

/* Whether table t may be shared as a read-only table of the node (a
** class: a metatable and its methods), admitting it: fields only, with
** string keys, no metatable, values that may be shared. No function can
** reach one (a closure's upvalue is never a table), and the embedder gives
** one only as a userdata's metatable, whose '__metatable' field hides it
** from getmetatable (and, for frozen tables, from debug.getmetatable).
** What Lua would write on a read is written now: the cache of absent
** metamethods in 'flags' (luaT_gettm), so nothing writes it later. */
static int shareable_table (Table *t, Admitted *a) {
  unsigned int i;
  int e;
  if (is_frozen(t) || admitted(a, t)) return 1;
  if (luaH_realasize(t) != 0 || t->metatable != NULL || isLazy(t)) return 0;
  if (a->n == MAX_FROZEN) return 0;
  a->p[a->n++] = t;
  for (i = 0; i < cast_uint(sizenode(t)); i++) {
    Node *n = gnode(t, i);
    if (isempty(gval(n))) continue;
    if (!keyisshrstr(n) || !node_string(keystrval(n)) || !shareable(gval(n), a, 1)) return 0;
  }
  for (e = TM_INDEX; e <= TM_EQ; e++)
    luaT_gettm(t, cast(TMS, e), G(a->L)->tmname[e]);
  return 1;
}

/* Whether v may be shared; tables only where 'tables' (a module's field
** and what such a table holds), never in an upvalue, where the closure
** could write it. */
static int shareable (const TValue *v, Admitted *a, int tables) {
  switch (ttypetag(v)) {
    case LUA_VNIL: case LUA_VFALSE: case LUA_VTRUE:
    case LUA_VNUMINT: case LUA_VNUMFLT:
    case LUA_VLNGSTR:
    case LUA_VLCF:
      return 1;
    case LUA_VSHRSTR:  /* compared by address: it must be the node's */
      return node_string(tsvalue(v));
    case LUA_VLCL:
      return shareable_closure(clLvalue(v), a);
    case LUA_VTABLE:
      return tables && shareable_table(hvalue(v), a);
    default:
      return 0;
  }
}

/* Checks the table at idx, a module's, for freezing: 1 when each of its
** values is a function or a table (a class) that may be shared (all then
** recorded as frozen; L must be frozen next), 0 otherwise (nothing
** recorded). Called by one thread at a time: as the node's shared state is
** built, or under the loader's lock (vm::loader). */
int synodic_freezable (lua_State *L, int idx) {
  const TValue *o = (idx > 0) ? s2v(L->ci->func.p + idx) : s2v(L->top.p + idx);
  Table *t;
  unsigned int i;
  Admitted a;
  a.n = 0;
  a.L = L;
  if (!ttistable(o)) return 0;
  t = hvalue(o);
  if (luaH_realasize(t) != 0 || t->metatable != NULL) return 0;  /* fields only */
  for (i = 0; i < cast_uint(sizenode(t)); i++) {
    Node *n = gnode(t, i);
    if (isempty(gval(n))) continue;
    if (!keyisshrstr(n) || !(ttisLclosure(gval(n)) || ttistable(gval(n)))) return 0;
    if (!shareable(gval(n), &a, 1)) return 0;
  }
  if (frozen_count() + a.n > MAX_FROZEN) return 0;
  return add_frozen(a.p, a.n);
}

/* Pushes the frozen function f. The caller has made room on the stack. */
void synodic_push_frozen (lua_State *L, const void *f) {
  setclLvalue2s(L, L->top.p, (LClosure *)f);
  L->top.p++;
}

/* Pushes the frozen table t. The caller has made room on the stack. */
void synodic_push_frozen_table (lua_State *L, const void *t) {
  sethvalue2s(L, L->top.p, (Table *)t);
  L->top.p++;
}
