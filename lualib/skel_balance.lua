-- synodic.skel.balance: where the skeleton evaluator (synodic.skel) sends
-- an instruction, and how many instructions each node gets in flight. Two
-- of the evaluator's optimisations live here: lazy binding (an instruction
-- goes where most of its inputs are, when that node has room) and load
-- balancing (a node's limit, between the lookahead's min and max, follows
-- how much of a task's time it computes: a node loaded from outside gets
-- fewer). The functions take the evaluator as their first argument.

local B = {}

local function clamp(x, lo, hi) return math.max(lo, math.min(hi, x)) end

-- The node where most of an instruction's inputs are (lazy binding).
local function preferred(ins)
  local count, best, most = {}, nil, 0
  for _, tok in ipairs(ins.inputs) do
    if tok.node then
      count[tok.node] = (count[tok.node] or 0) + 1
      if count[tok.node] > most then best, most = tok.node, count[tok.node] end
    end
  end
  return best
end

-- Where `ins` should run now, or nil to wait: the node of its inputs if it
-- has room, else the node with the most room, unless that one is busy
-- enough that moving the inputs would cost more than waiting.
function B.place(self, ins)
  if ins.farm and (self.farms[ins.farm] or 0) >= ins.farm.workers then return nil end
  local pref = self.lazy and preferred(ins)
  local p = pref and self.nodes[pref]
  if p and p.alive and p.in_flight < p.limit then return p end
  local best, room = nil, 0
  for _, name in ipairs(self.order) do
    local n = self.nodes[name]
    if n.alive and n.limit - n.in_flight > room then best, room = n, n.limit - n.in_flight end
  end
  if best and p and p.alive and best.in_flight >= self.min then return nil end
  return best
end

-- Whether some live node has room for one more instruction.
function B.has_room(self)
  for _, name in ipairs(self.order) do
    local n = self.nodes[name]
    if n.alive and n.in_flight < n.limit then return true end
  end
  return false
end

-- A note from `node` came, saying how much of its task's time it computed
-- (`efficiency`, 0 to 1): its limit follows a smoothed efficiency.
function B.noted(self, node, efficiency)
  node.efficiency = 0.7 * node.efficiency + 0.3 * efficiency
  node.limit = clamp(math.floor(self.min + (self.max - self.min) * node.efficiency ^ 2 + 0.5), self.min, self.max)
end

return B
