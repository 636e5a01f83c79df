-- ALua basics (paper §3): setting a variable and defining a function in
-- another agent, and an RPC-like reply: agent B computes addtb(y) and sends
-- back the code "print(70)", which runs here.
alua.spawn{"B"}

-- Send variable n to agent B.
local n = 50
alua.send("B", string.format("n=%d", n))

-- Send a table, serialised as Lua source.
local x = {1, 4, 9, 16}
alua.send("B", string.format("y=%s", alua.tostring(x)))

-- Send the definition of a function.
alua.send("B", [[
  function addtb(t)
    local sum = 0
    for i = 1, #t do sum = sum + t[i] end
    return sum
  end
]])

-- RPC-like: B evaluates addtb(y) and sends the result back as code.
alua.send("B", "y = {10, 20, 40}")
alua.send("B", [[ alua.send("main", "print(" .. addtb(y) .. ") alua.exit_all()") ]])
