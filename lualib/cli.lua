-- synodic.cli: the main process of `synodic [options] [script [args]]`,
-- the `lua` command's interface (SPEC §8). It does what the command line
-- asked, in `lua`'s order: the version line (-v), LUA_INIT (unless -E),
-- -e and -l in the order given, the script (a file, or standard input for
-- `-`) with its arguments, then a prompt (-i, or no script on a terminal)
-- whose lines run here, in the main process, with every module at hand.
--
-- The prompt asks the command for each line on a port ("prompt" and the
-- prompt's text; see crates/cli/src/lua_cli.rs), which answers with the
-- message "$cli.line", text or "$cli.eof". Native primitives used:
-- synodic.control.write, receive_match.
local s = require "synodic"

local cli = {}


-- An error the command reports as `lua` does: one line, status 1.
local function fail(msg)
  io.stderr:write("synodic: ", tostring(msg), "\n")
  io.stderr:flush()
  os.exit(1)
end

-- Runs `chunk`, reporting its error with a traceback, as `lua` does.
local function docall(chunk, ...)
  local ok, err = xpcall(chunk, function(e)
    if type(e) ~= "string" then
      local mt = getmetatable(e)
      e = (mt and mt.__tostring) and tostring(e) or string.format("(error object is a %s value)", type(e))
    end
    -- Without the frames of this driver.
    return (debug.traceback(e, 2):gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
  end, ...)
  if not ok then fail(err) end
end

local function dochunk(chunk, err)
  if not chunk then fail(err) end
  docall(chunk)
end

local function init()
  local name = "LUA_INIT_5_4"
  local code = os.getenv(name)
  if not code then
    name = "LUA_INIT"
    code = os.getenv(name)
  end
  if not code then return end
  if code:sub(1, 1) == "@" then
    dochunk(loadfile(code:sub(2)))
  else
    dochunk(load(code, "=" .. name))
  end
end

--- The prompt, on port `port`, until end of input.
function cli.prompt(port)
  local control = require "synodic.control"
  local repl = require "synodic.repl"
  local prompt = repl.new(function(text) io.stdout:write(text, "\n") io.stdout:flush() end,
    function(text) io.stderr:write(text, "\n") io.stderr:flush() end, "=stdin")
  local more = false
  while true do
    io.stdout:flush()
    control.write(port, "prompt", more and ">> " or "> ")
    -- (A Ctrl-C that comes once its line is done interrupts this wait: no harm.)
    local ok, tag, line = pcall(s.receive_match, function(t) return t == "$cli.line" or t == "$cli.eof" end)
    if not ok then tag = nil end
    if tag == "$cli.eof" then return end
    if tag then more = prompt.feed(line) == "more" end
  end
end

function cli.main(cl)
  if cl.version then print(cl.banner) end
  if cl.warnings then warn("@on") end
  if cl.init then init() end
  for _, action in ipairs(cl.actions) do
    if action[1] == "e" then
      dochunk(load(action[2], "=(command line)"))
    else
      local global, module = action[2], action[3]
      local ok, value = pcall(require, module)
      if not ok then fail(value) end
      _G[global] = value
    end
  end
  if cl.source then
    local chunk, err = load(cl.source, "=stdin")
    if not chunk then fail(err) end
    docall(chunk, table.unpack(cl.args, 1, cl.args.n))
  elseif cl.script then
    local chunk, err = loadfile(cl.script)
    if not chunk then fail(err) end
    docall(chunk, table.unpack(cl.args, 1, cl.args.n))
  end
  if cl.interactive then
    if not cl.version then print(cl.banner) end
    cli.prompt(cl.port)
  end
end

return cli
