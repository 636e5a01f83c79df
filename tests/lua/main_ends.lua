-- The run ends when the main process ends, while others still run or wait.
local s = require "synodic"
s.spawn(function() while true do end end)
s.spawn(function() s.receive() end)
s.spawn(function() s.sleep(3600) end)
print("main_ends ok")
