-- An asynchronous team (A-Team, paper §4.3) for set covering. Two solution
-- repositories hold covers; two initialising agents fill them with random
-- feasible covers; improving agents repeatedly take a cover from a
-- repository, refine it and put it back. Nothing coordinates them but the
-- repositories. Midway, main instruments alua.send in every agent to count
-- messages (the paper's console trick, see docs/agents.md) and restores it.
-- usage: synodic run examples/alua/ateam.lua [rounds]
local ROUNDS = math.tointeger(tonumber(arg[1])) or 40

-- A generated instance: ELEMENTS elements, SETS sets with costs.
local ELEMENTS, SETS = 40, 30
math.randomseed(2024)
local instance = {elements = ELEMENTS, sets = {}, cost = {}}
for s = 1, SETS do
  local members = {}
  for _ = 1, math.random(3, 9) do members[math.random(ELEMENTS)] = true end
  instance.sets[s], instance.cost[s] = members, math.random(1, 10)
end
for e = 1, ELEMENTS do -- every element is coverable
  instance.sets[math.random(SETS)][e] = true
end

-- Problem code, the same in every agent.
local problem = string.format("instance = %s", alua.tostring(instance)) .. [==[
  function covered(cover)
    local seen = {}
    for s in pairs(cover) do for e in pairs(instance.sets[s]) do seen[e] = true end end
    for e = 1, instance.elements do if not seen[e] then return false end end
    return true
  end
  function cost(cover)
    local c = 0
    for s in pairs(cover) do c = c + instance.cost[s] end
    return c
  end
  -- Adds sets (best cost per new element first) until everything is covered.
  function repair(cover)
    while not covered(cover) do
      local seen = {}
      for s in pairs(cover) do for e in pairs(instance.sets[s]) do seen[e] = true end end
      local best, best_ratio
      for s, members in ipairs(instance.sets) do
        if not cover[s] then
          local new = 0
          for e in pairs(members) do if not seen[e] then new = new + 1 end end
          if new > 0 then
            local ratio = instance.cost[s] / new * (0.8 + 0.4 * math.random())
            if not best_ratio or ratio < best_ratio then best, best_ratio = s, ratio end
          end
        end
      end
      cover[best] = true
    end
    return cover
  end
  -- Drops sets that others already cover, most expensive first.
  function prune(cover)
    local order = {}
    for s in pairs(cover) do order[#order + 1] = s end
    table.sort(order, function(x, y) return instance.cost[x] > instance.cost[y] end)
    for _, s in ipairs(order) do
      cover[s] = nil
      if not covered(cover) then cover[s] = true end
    end
    return cover
  end
]==]

local repos = alua.spawn{"repo1", "repo2"}
local initialisers = alua.spawn{"init1", "init2"}
local improvers = alua.spawn{"improve1", "improve2", "improve3"}
local everyone = {"repo1", "repo2", "init1", "init2", "improve1", "improve2", "improve3"}
alua.mcast(everyone, problem)

-- Repositories: keep covers, hand one out on request, keep the best.
alua.mcast(repos, [==[
  covers = {}
  function deposit(cover)
    covers[#covers + 1] = cover
    table.sort(covers, function(a, b) return cost(a) < cost(b) end)
    while #covers > 8 do covers[#covers] = nil end
  end
  function request(who)
    if #covers == 0 then
      alua.send(who, "retry()")
    else
      local cover = covers[math.random(#covers)]
      alua.send(who, "refine(" .. alua.tostring(cover) .. ", " .. string.format("%q", alua.id) .. ")")
    end
  end
]==])

-- Initialisers: random feasible covers into both repositories.
alua.mcast(initialisers, [==[
  for i = 1, 4 do
    local cover = {}
    for _ = 1, 3 do cover[math.random(#instance.sets)] = true end
    cover = prune(repair(cover))
    alua.send(i % 2 == 0 and "repo1" or "repo2", "deposit(" .. alua.tostring(cover) .. ")")
  end
]==])

-- Improvers: take, perturb, repair, prune, put back; ROUNDS times.
alua.mcast(improvers, string.format("rounds = %d", ROUNDS) .. [==[
  function refine(cover, repo)
    local sets = {}
    for s in pairs(cover) do sets[#sets + 1] = s end
    cover[sets[math.random(#sets)]] = nil -- drop one set, then mend
    cover = prune(repair(cover))
    alua.send(repo, "deposit(" .. alua.tostring(cover) .. ")")
    rounds = rounds - 1
    if rounds > 0 then ask() else alua.send("main", "improver_done()") end
  end
  function ask() alua.send(math.random(2) == 1 and "repo1" or "repo2", string.format("request(%q)", alua.id)) end
  retry = ask
  ask()
]==])

-- Instrumentation halfway: the code the paper types at the console.
-- (Its names differ from the console session's, so both can be on at once.)
local instrument = [==[
  sent = 0
  send_before_counting = alua.send
  alua.send = function(to, msg) sent = sent + 1 return send_before_counting(to, msg) end
]==]
alua.mcast(everyone, instrument)

local done, best = 0, {}
function improver_done()
  done = done + 1
  if done < #improvers then return end
  -- Restore alua.send everywhere, and collect counts and the best covers.
  alua.mcast(everyone, [[ alua.send = send_before_counting alua.send("main", "count(" .. sent .. ")") ]])
  alua.mcast(repos, [[ alua.send("main", "report(" .. alua.tostring(covers[1]) .. ")") ]])
end

local counted, total = 0, 0
function count(n)
  counted, total = counted + 1, total + n
  finish()
end

function report(cover)
  best[#best + 1] = cover
  finish()
end

load(problem)()
function finish()
  if counted < #everyone or #best < #repos then return end
  local winner = best[1]
  for _, c in ipairs(best) do if cost(c) < cost(winner) then winner = c end end
  assert(covered(winner), "the best cover does not cover every element")
  local sets = {}
  for s in pairs(winner) do sets[#sets + 1] = s end
  table.sort(sets)
  print(string.format("best cover: cost %d with sets {%s}; %d messages counted while instrumented",
    cost(winner), table.concat(sets, ","), total))
  alua.exit_all()
end
