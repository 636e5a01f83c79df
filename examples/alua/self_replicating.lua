-- A self-replicating message (paper §4.1): agents form a logical pipeline in
-- which each one knows only `nexthost`. The message carries its own text, so
-- each agent runs the action and forwards the whole message to the next.
-- usage: synodic run examples/alua/self_replicating.lua [agents]
local count = math.tointeger(tonumber(arg[1])) or 6

local names = {}
for i = 1, count do names[i] = "P" .. i end
alua.spawn(names)
for i, name in ipairs(names) do
  -- Each agent knows its own n and the next agent only.
  alua.send(name, string.format("n = %d nexthost = %s", i * i, names[i + 1] and string.format("%q", names[i + 1]) or "nil"))
end

-- The action: report n to main. The message defines `replicate` (its own
-- text) and runs it; running it forwards the same two steps to nexthost.
local body = [[
  alua.send("main", "got(" .. n .. ")")
  if nexthost then
    alua.send(nexthost, string.format("replicate = %q load(replicate)()", replicate))
  end
]]

local seen = {}
function got(n)
  seen[#seen + 1] = n
  if #seen == count then
    print("pipeline reported: " .. table.concat(seen, " "))
    alua.exit_all()
  end
end

alua.send(names[1], string.format("replicate = %q load(replicate)()", body))
