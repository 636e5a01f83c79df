/*
** version.h: every helper in csrc/ reads Lua's internal structures, which
** change between releases without notice: they build against Lua 5.4.8
** (vendor/lua-5.4.8) and nothing else.
*/
#ifndef SYNODIC_VERSION_H
#define SYNODIC_VERSION_H

#include "lua.h"

#if LUA_VERSION_NUM != 504 || LUA_VERSION_RELEASE_NUM != 50408
#error "csrc/ reads the internals of Lua 5.4.8 exactly; check it against this release before building"
#endif

#endif
