/*
** plain.c: the codec's short path, one call each way.
**
** Nearly every message is a few plain values (nil, booleans, numbers, short
** strings, pids) that fit in a message's inline bytes. Through Lua's API each
** value costs several calls (what is it, what does it hold, push it), each
** resolving its stack index again; here the encoder reads the stack slots'
** tags directly and the decoder writes the slots directly, which on a ring's
** hop is about a tenth of the instructions. The bytes are those of
** docs/wire-format.md, exactly as the general encoder in src/vm/codec/ writes
** them (src/plain.rs tests the two paths against each other). Anything else
** (tables, functions, other userdata, a message that does not fit, bytes
** that are not plain values) is refused with -1 and goes down the general
** path, which also reports junk. Needs Lua's internal headers, hence C.
*/
#include <stdint.h>
#include <string.h>

#include "lua.h"
#include "lstate.h"
#include "lobject.h"
#include "ldo.h"

#include "version.h"

/* The wire format's numbers (WIRE_VERSION, TAG_*, PID_TAG), written by
** build.rs from synodic-core's wire/tags.rs. */
#include "wire_tags.h"
#define MAX_VALUES 8

/* The longest value other than a string: a tag and a ten-byte varint. */
#define MAX_SCALAR 11

static unsigned char *put_varint(unsigned char *p, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = (unsigned char)(v | 0x80);
  *p++ = (unsigned char)v;
  return p;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

/* Writes `v` at `p`, where at least `room` bytes of the message are left and
** MAX_SCALAR more may be scribbled on; returns the end, or NULL when `v` is
** not plain. A string longer than `room` is refused before it is written;
** any other value's overrun is caught by the caller. */
static unsigned char *put_value(unsigned char *p, ptrdiff_t room, const TValue *v) {
  switch (ttypetag(v)) {
    case LUA_VNIL: *p++ = TAG_NIL; return p;
    case LUA_VFALSE: *p++ = TAG_FALSE; return p;
    case LUA_VTRUE: *p++ = TAG_TRUE; return p;
    case LUA_VNUMINT: {
      uint64_t i = (uint64_t)ivalue(v);
      *p++ = TAG_INT;
      return put_varint(p, (i << 1) ^ (uint64_t)((int64_t)i >> 63));
    }
    case LUA_VNUMFLT: {
      union { lua_Number n; uint64_t bits; } f;
      f.n = fltvalue(v);
      *p++ = TAG_FLOAT;
      return put_u64(p, f.bits);
    }
    case LUA_VSHRSTR: case LUA_VLNGSTR: {
      TString *ts = tsvalue(v);
      size_t len = tsslen(ts);
      if (len > (size_t)room) return NULL;  /* so its length is one byte */
      *p++ = TAG_STR;
      *p++ = (unsigned char)len;
      memcpy(p, getstr(ts), len);
      return p + len;
    }
    case LUA_VLIGHTUSERDATA: {
      uint64_t raw = (uint64_t)(uintptr_t)pvalue(v);
      if ((raw & PID_TAG_BITS) != PID_TAG) return NULL;
      *p++ = TAG_PID;
      return put_u64(p, raw);
    }
    default: return NULL;
  }
}

/* Writes the values at stack indices first..last (positive, at most
** MAX_VALUES) as one message of at most `limit` bytes into `buf`, which has
** room for limit + MAX_SCALAR; returns its length, or -1 when a value is not
** plain, an index is not a stack slot, or the message is longer. */
int synodic_encode_plain(lua_State *L, int first, int last, unsigned char *buf, int limit) {
  unsigned char *p = buf, *stop = buf + limit;
  StkId func = L->ci->func.p;
  int idx, count = last - first + 1;
  if (first < 1 || count > MAX_VALUES || limit < 2 || (count > 0 && func + last >= L->top.p)) return -1;
  *p++ = WIRE_VERSION;
  *p++ = (unsigned char)(count > 0 ? count : 0);
  for (idx = first; idx <= last; idx++) {
    p = put_value(p, stop - p, s2v(func + idx));
    if (p == NULL || p > stop) return -1;
  }
  return (int)(p - buf);
}

typedef struct In {
  const unsigned char *p, *end;
} In;

/* As the general reader: at most ten bytes, the tenth no more than 1. */
static int get_varint(In *in, uint64_t *v) {
  int shift;
  *v = 0;
  for (shift = 0; shift < 64; shift += 7) {
    unsigned char b;
    if (in->p == in->end) return 0;
    b = *in->p++;
    if (shift == 63 && b > 1) return 0;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return 1;
  }
  return 0;
}

static int get_u64(In *in, uint64_t *v) {
  int i;
  if (in->end - in->p < 8) return 0;
  *v = 0;
  for (i = 0; i < 8; i++) *v |= (uint64_t)*in->p++ << (8 * i);
  return 1;
}

/* Pushes one value; 0 (nothing pushed) if it is not a well-formed plain one. */
static int push_value(lua_State *L, In *in, int *pids) {
  uint64_t u;
  if (in->p == in->end) return 0;
  switch (*in->p++) {
    case TAG_NIL: setnilvalue(s2v(L->top.p)); break;
    case TAG_FALSE: setbfvalue(s2v(L->top.p)); break;
    case TAG_TRUE: setbtvalue(s2v(L->top.p)); break;
    case TAG_INT:
      if (!get_varint(in, &u)) return 0;
      setivalue(s2v(L->top.p), (lua_Integer)((u >> 1) ^ (~(u & 1) + 1)));
      break;
    case TAG_FLOAT: {
      union { lua_Number n; uint64_t bits; } f;
      if (!get_u64(in, &f.bits)) return 0;
      setfltvalue(s2v(L->top.p), f.n);
      break;
    }
    case TAG_STR:
      if (!get_varint(in, &u) || u > (uint64_t)(in->end - in->p)) return 0;
      lua_pushlstring(L, (const char *)in->p, (size_t)u);
      in->p += u;
      return 1;
    case TAG_PID:
      if (!get_u64(in, &u) || (u & PID_TAG_BITS) != PID_TAG) return 0;
      setpvalue(s2v(L->top.p), (void *)(uintptr_t)u);
      *pids = 1;
      break;
    default: return 0;
  }
  L->top.p++;
  return 1;
}

/* Pushes the values of the message buf[0..len) and returns how many, setting
** *pids when one was a pid; or pushes nothing and returns -1 when the message
** is not all plain, well-formed values (or the stack cannot grow). */
int synodic_decode_plain(lua_State *L, const unsigned char *buf, size_t len, int *pids) {
  In in = {buf, buf + len};
  ptrdiff_t base;
  int count, i;
  if (len < 2 || buf[0] != WIRE_VERSION || buf[1] > MAX_VALUES) return -1;
  count = buf[1];
  in.p += 2;
  if (L->ci->top.p - L->top.p < count && !lua_checkstack(L, count)) return -1;
  base = savestack(L, L->top.p);  /* an offset: pushing a string may move the stack */
  for (i = 0; i < count; i++) {
    if (!push_value(L, &in, pids)) break;
  }
  if (i < count || in.p != in.end) {
    L->top.p = restorestack(L, base);
    return -1;
  }
  return count;
}
