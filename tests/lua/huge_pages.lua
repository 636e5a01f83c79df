-- Transparent huge pages back a node's large blocks and nothing else
-- (crates/cli/src/alloc.rs): a 64 MB buffer made fresh faults in 2 MiB
-- pages where the kernel allows huge pages only where they are asked for
-- (Linux 6.18 and later, with huge pages not turned off for the system);
-- a node of 2,000 processes, whose blocks are all smaller than 4 MiB, gets
-- none anywhere.
local s = require "synodic"
local buffer = require "synodic.buffer"
local MB = 1 << 20

local function huge_kb()
  for line in io.lines("/proc/self/smaps_rollup") do
    local kb = line:match("^AnonHugePages:%s*(%d+)")
    if kb then return tonumber(kb) end
  end
  error("no AnonHugePages in /proc/self/smaps_rollup")
end

local function read(path)
  local f = io.open(path)
  if not f then return "" end
  local text = f:read("a")
  f:close()
  return text
end

-- Small blocks only: no huge page.
local me = s.self()
for i = 1, 2000 do
  s.spawn(function(boss) require("synodic").send(boss, "up") require("synodic").receive() end, me)
end
for _ = 1, 2000 do s.receive_match("up") end
assert(huge_kb() == 0, ("the heap got huge pages: %d kB"):format(huge_kb()))

-- A large block: huge pages where the kernel can give them on request.
local major, minor = read("/proc/sys/kernel/osrelease"):match("^(%d+)%.(%d+)")
local asked = read("/sys/kernel/mm/transparent_hugepage/enabled")
local can = major and (tonumber(major) > 6 or (tonumber(major) == 6 and tonumber(minor) >= 18)) and not asked:find("%[never%]")
local big = buffer.new(64 * MB, "u8")
big[1], big[#big] = 1, 1
if can then
  assert(huge_kb() >= 32 * 1024, ("a fresh 64 MB buffer is in %d kB of huge pages"):format(huge_kb()))
else
  print("huge_pages: this kernel gives no huge pages only where asked; large blocks checked no further")
end
big = nil
collectgarbage()
print("huge_pages ok")
os.exit(0)
