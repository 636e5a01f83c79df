/*
** hot.c: which memory a blocked Lua state touches when it is resumed.
**
** A process woken from cold memory would otherwise wait for each cache line
** in turn: the state leads to its call frame, the frame to the closure, the
** closure to its prototype, its code and its upvalues, each a dependent load.
** Listing those lines while the state is still hot lets the waker start
** loading them all at once (see `Process::set_hot_lines` in synodic-core).
** Needs Lua's internal headers, hence C.
*/
#include <stdint.h>

#include "lstate.h"
#include "lobject.h"
#include "lfunc.h"
#include "ltable.h"

#include "version.h"

#define LINE 64
#define WINDOW_LINES 128

typedef struct Lines {
  uintptr_t base;  /* start of the window, LINE-aligned */
  uint64_t map[2];  /* bit i: the line at base + i * LINE */
} Lines;

/* Marks the lines of [p, p + len) that fall inside the window. */
static void mark(Lines *l, const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p, end = a + (len ? len : 1);
  uintptr_t limit = l->base + WINDOW_LINES * LINE;
  if (end <= l->base || a >= limit) return;
  if (a < l->base) a = l->base;
  if (end > limit) end = limit;
  for (a &= ~(uintptr_t)(LINE - 1); a < end; a += LINE) {
    size_t i = (a - l->base) / LINE;
    l->map[i / 64] |= (uint64_t)1 << (i % 64);
  }
}

/* The node where `key` sits in `t` (or its main position if absent),
** marking each node of the collision chain on the way, as a lookup walks it. */
static void mark_lookup(Lines *l, Table *t, TString *key) {
  Node *n = gnode(t, lmod(key->hash, sizenode(t)));
  int steps;
  for (steps = 0; steps < 8; steps++) {
    mark(l, n, sizeof(Node));
    if ((keyisshrstr(n) && keystrval(n) == key) || gnext(n) == 0) return;
    n += gnext(n);
  }
}

/* A table the blocked function holds, and the nodes a lookup of each of
** its first `nk` short-string constants visits in it. */
static void mark_table(Lines *l, const TValue *v, Proto *p, int nk) {
  int k;
  if (ttistable(v) && !isdummy(hvalue(v))) {
    Table *t = hvalue(v);
    mark(l, t, sizeof(Table));
    for (k = 0; k < nk; k++) {
      if (ttisshrstring(&p->k[k])) mark_lookup(l, t, tsvalue(&p->k[k]));
    }
  }
}

/* Registers of the blocked function looked at for tables (a module kept in
** a local: `local s = require "synodic"`). */
#define MAX_REGISTERS 8

/* The Lua function that made the blocking call: frame, closure, prototype,
** code, constants, upvalues. Short-string constants are likely keys: their
** strings (a lookup reads the hash) and, in each table an upvalue or one of
** its first registers holds (a module, _ENV), the nodes a lookup of them
** visits. `end` is where its live registers end (the called function). */
static void mark_lua_frame(Lines *l, lua_State *L, CallInfo *ci, StkId end) {
  LClosure *cl = clLvalue(s2v(ci->func.p));
  Proto *p = cl->p;
  int i, k;
  int nk = p->sizek < 16 ? p->sizek : 16;
  StkId r;
  mark(l, ci, sizeof(CallInfo));
  mark(l, ci->func.p, (size_t)((char *)L->top.p - (char *)ci->func.p));
  mark(l, cl, sizeLclosure(cl->nupvalues));
  mark(l, p, sizeof(Proto));
  mark(l, p->code, p->sizecode * sizeof(Instruction));
  mark(l, p->k, p->sizek * sizeof(TValue));
  for (k = 0; k < nk; k++) {
    if (ttisshrstring(&p->k[k])) mark(l, tsvalue(&p->k[k]), sizeof(TString));
  }
  for (i = 0; i < cl->nupvalues; i++) {
    mark(l, cl->upvals[i], sizeof(UpVal));
    mark_table(l, cl->upvals[i]->v.p, p, nk);
  }
  for (r = ci->func.p + 1; r < end && r <= ci->func.p + MAX_REGISTERS; r++)
    mark_table(l, s2v(r), p, nk);
}

/* An address as an offset from `base` when it lies in the window there. */
static uintptr_t relative(const void *p, uintptr_t base) {
  uintptr_t a = (uintptr_t)p;
  return (a >= base && a < base + WINDOW_LINES * LINE) ? a - base : a;
}

/* Where the state stands: its frame, its stack and the code position of the
** calling Lua function, as offsets from `base` where they lie in its window
** (and `base`'s distance to `L`). A process blocking in a loop blocks at the
** same place every time, and the lines it will touch are the same; so do
** the copies of a template that block where its first copy did. */
uintptr_t synodic_hot_place(lua_State *L, const void *base) {
  uintptr_t b = (uintptr_t)base;
  CallInfo *prev = L->ci->previous;
  uintptr_t key = relative(L->ci, b) ^ (relative(L->stack.p, b) << 1) ^ (relative(L, b) << 3);
  if (prev != NULL && isLua(prev)) key ^= relative(prev->u.l.savedpc, b) << 2;
  return key;
}

/* Fills `map` for the window of 128 lines at `base` (LINE-aligned), unless
** the state blocks where it did when `*last` was recorded: then it returns 0
** and leaves `map` alone (the lines have not moved). */
int synodic_hot_lines(lua_State *L, const void *base, uint64_t map[2], uintptr_t *last) {
  Lines l = {(uintptr_t)base, {0, 0}};
  CallInfo *ci = L->ci;
  uintptr_t key = synodic_hot_place(L, base);
  if (key == *last) return 0;
  *last = key;
  mark(&l, (char *)L - LUA_EXTRASPACE, sizeof(lua_State) + LUA_EXTRASPACE);
  mark(&l, ci, sizeof(CallInfo));
  if (ci->previous != NULL && ci->previous != &L->base_ci && isLua(ci->previous))
    mark_lua_frame(&l, L, ci->previous, ci->func.p);
  map[0] = l.map[0];
  map[1] = l.map[1];
  return 1;
}
