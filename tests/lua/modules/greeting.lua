-- A plain Lua module, found through package.path by tests/lua/libraries.lua.
local M = {}
function M.hello(who) return "hello, " .. who end
return M
