---@meta synodic.log
-- Records with a level, the time, the node and the pid (SPEC §11).

---@class synodic.log
local log = {}

---@param fmt any a string.format format, or a value
---@param ... any
function log.debug(fmt, ...) end
---@param fmt any
---@param ... any
function log.info(fmt, ...) end
---@param fmt any
---@param ... any
function log.warn(fmt, ...) end
---@param fmt any
---@param ... any
function log.error(fmt, ...) end
---The node's level.
---@return "debug"|"info"|"warn"|"error"|"none"
function log.level() end
---Sets the node's level.
---@param level "debug"|"info"|"warn"|"error"|"none"
function log.set_level(level) end

return log
