-- synodic.log: records with a level, the time, the node and the pid, on
-- standard error (SPEC §11). `log.info(fmt, ...)` formats as
-- string.format does, but only when the node's level lets the record
-- through (`--log-level`, or `log.set_level`), so a debug line costs one
-- call when debug is off. `--log-format json` makes each record one JSON
-- object a line. Crash reports of processes are records of level error.
local raw = require "synodic.log.raw"
local format, select, tostring = string.format, select, tostring

local log = {}

local function level(name)
  return function(fmt, ...)
    if not raw.enabled(name) then return end
    if select("#", ...) > 0 then
      raw.write(name, format(fmt, ...))
    else
      raw.write(name, tostring(fmt))
    end
  end
end

log.debug = level("debug")
log.info = level("info")
log.warn = level("warn")
log.error = level("error")

-- The node's level, by name; and a new one for the whole node.
log.level = raw.level
log.set_level = raw.set_level

return log
