/*
** preempt.c: arming and disarming the count hook that preempts a process.
**
** `lua_sethook` marks every Lua frame of the stack for tracing, so that a
** line hook set now sees all of them. Preemption needs only the running
** frame to stop: arming from the signal handler walked the whole stack
** every time slice, and a process with a deep stack barely advanced. Here
** only the innermost Lua frame is marked (a C function running above it
** stops when it returns to that frame; Lua functions it calls start marked,
** since the hook mask is set). Both functions only store fields, as
** `lua_sethook` does, so they may run in a signal handler.
**
** The program's own hook is kept: the mask keeps its events (the preempting
** hook passes them on), and disarming puts hook, mask and count back as
** they were, without touching the frames' marks (those the program's hook
** needs are still set).
*/
#include "lstate.h"
#include "ldebug.h"

#include "version.h"

/* A thread's hook as the program set it. Keep in step with `Saved` in src/preempt.rs. */
typedef struct SynodicHook {
  lua_Hook hook;
  int mask;
  int count;
} SynodicHook;

void synodic_hook_save(lua_State *L, SynodicHook *out) {
  out->hook = L->hook;
  out->mask = L->hookmask;
  out->count = L->basehookcount;
}

/* Installs `preempt` to run at the next instruction, keeping the program's
** events in the mask (a C function running now is preempted when it returns
** to Lua); 0 (nothing done) while a hook runs: the program's hook must see
** its own settings, and a hook cannot be preempted anyway. (The monitor
** signals again a tick later.) */
int synodic_preempt_arm(lua_State *L, lua_Hook preempt, int program_mask) {
  CallInfo *ci;
  if (!L->allowhook)
    return 0;
  L->hook = preempt;
  L->basehookcount = 1;
  L->hookcount = 1;
  L->hookmask = cast_byte(program_mask | LUA_MASKCOUNT);
  for (ci = L->ci; ci != NULL; ci = ci->previous) {
    if (isLua(ci)) {
      ci->u.l.trap = 1;
      break;
    }
  }
  return 1;
}

void synodic_hook_restore(lua_State *L, const SynodicHook *saved) {
  L->hook = saved->hook;
  L->basehookcount = saved->count;
  L->hookcount = saved->count;
  L->hookmask = cast_byte(saved->mask);
}

/* A thread resumed after the preempting hook made it yield: Lua marked its
** frame so that hooks are not called twice for the instruction it stopped
** at, and clears the mark at the next line event. Without a line hook of
** the program's, that may be much later, and the mark would then swallow
** the first line event of a hook set meanwhile: it is cleared here. With
** one, the program's hook has seen this instruction's line event already,
** and the mark must stay. Lua also set the count to 1 (to undo the count
** event that fired): that was the preempting hook's count, and the
** program's own count starts afresh. 1 when this was the thread the hook
** stopped. */
int synodic_preempt_resumed(lua_State *L) {
  CallInfo *ci = L->ci;
  if (L->status != LUA_YIELD || !isLua(ci) || !(ci->callstatus & CIST_HOOKYIELD))
    return 0;
  if (!(L->hookmask & LUA_MASKLINE))
    ci->callstatus &= ~CIST_HOOKYIELD;
  L->hookcount = L->basehookcount;
  return 1;
}
