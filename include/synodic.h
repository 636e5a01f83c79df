/*
 * synodic.h: what C modules loaded with `require` get from Synodic beyond
 * Lua's own API (lua.h, lauxlib.h): the bytes of synodic.buffer values, so
 * that heavy computation on large data stays in C while Lua coordinates.
 * The synodic binary exports these functions, as it exports Lua's.
 *
 * Build a module against the embedded Lua's headers and this one, e.g.
 *   cc -O2 -shared -fPIC -I vendor/lua-5.4.8 -I include filters.c -o filters.so
 *
 * None of these raises a Lua error; each returns NULL when it cannot do
 * what it says. A pointer stays valid while the buffer is alive (a buffer
 * never changes size); bytes returned for reading may be shared with other
 * processes, so never write through them.
 */
#ifndef SYNODIC_H
#define SYNODIC_H

#include <stddef.h>
#include <lua.h>

/* The bytes of the buffer at `idx` and their number in *len; NULL if the
   value is not a buffer. */
const unsigned char *synodic_buffer_bytes(lua_State *L, int idx, size_t *len);

/* The bytes of the buffer at `idx`, to write: a buffer shared with other
   processes is copied first (copy on write). NULL if the value is not a
   buffer or there is no memory for the copy. */
unsigned char *synodic_buffer_bytes_mut(lua_State *L, int idx, size_t *len);

/* Pushes a new buffer of `len` zeroed bytes ("u8" elements) and returns its
   bytes; NULL, with nothing pushed, when there is no memory for it (or the
   process is over its memory limit). */
unsigned char *synodic_buffer_new(lua_State *L, size_t len);

#endif
