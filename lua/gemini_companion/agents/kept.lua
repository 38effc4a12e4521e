--- Agents that outlive Neovim (`terminal.tmux.keep`): at exit their tmux panes stay, and a record
--- (0600, atomic, one per folder in the state folder) says which they are and the port and tokens
--- their CLI was given. The next Neovim in that folder serves that port with those tokens again
--- (their editor tools and hooks read them once, at the CLI's start) and takes back each agent
--- whose pane still runs it: same tmux server, pane id, pane pid and process name. The record is
--- data: read once, removed, and anything in it that does not check out is ignored with one line.
local files = require('gemini_companion.files')
local message = require('gemini_companion.message')

local M = {}
local H = {}

local IDE_ENABLE = '/ide enable'
local OLD_RETRIES_S = 5 -- a CLI's lost IDE connection has given up retrying by then
local SETTLE_MS, SETTLED_CHECKS, MAX_CHECKS = 100, 5, 50 -- still for 500 ms; at most 5 s
local MAX_BYTES = 64 * 1024
local NAME = '^[%w_.@-]+$' -- an agent name as a record may name it (a config key of ours, or `gemini@2`)

--- Agents verified at start, waiting for the server to run to be taken back.
---@type table[]?
local waiting = nil
local left_at = nil -- when the Neovim that kept them exited (os.time(): the record's, data)

--- The record of the folder Neovim started in.
---@return string
local function path()
  local cwd = vim.fn.getcwd(-1, -1)
  return ('%s/gemini-companion/kept/%s.json'):format(vim.fn.stdpath('state'), vim.fn.sha256(cwd):sub(1, 32))
end

--- The tmux server Neovim runs in: its socket ($TMUX is "socket,pid,session").
---@return string?
local function tmux_server()
  return vim.env.TMUX and vim.env.TMUX:match('^([^,]+),') or nil
end

---@param args string[]
---@return string?
local function tmux(args)
  local ok, result = pcall(function()
    return vim.system(vim.list_extend({ 'tmux' }, args), { text = true }):wait(2000)
  end)
  return ok and result.code == 0 and vim.trim(result.stdout or '') or nil
end

--- Whether the pane `kept.pane` still runs the agent the record says: the pane on this tmux
--- server, alive, with that pid, whose process still has the name it had.
---@param kept table
---@return boolean
local function still_there(kept)
  if type(kept.pane) ~= 'string' or not kept.pane:match('^%%%d+$') or type(kept.pid) ~= 'number' then
    return false
  elseif kept.pane == vim.env.TMUX_PANE then -- Neovim's own
    return false
  end
  local out = tmux({ 'display-message', '-p', '-t', kept.pane, '#{pane_id} #{pane_pid} #{pane_dead}' })
  if out ~= ('%s %d 0'):format(kept.pane, kept.pid) then
    return false
  end
  local proc = vim.api.nvim_get_proc(kept.pid)
  return proc ~= nil and proc.name == kept.process
end

--- Kept agents whose pane still runs them (each an entry of the record), and why a record was
--- not used (nil: there was none, or it was used).
---@param record any
---@return table[] agents, string? why
local function verified(record)
  if type(record) ~= 'table' or type(record.agents) ~= 'table' or type(record.server) ~= 'table' then
    return {}, 'not a record of kept agents'
  end
  if record.cwd ~= vim.fn.getcwd(-1, -1) or record.tmux ~= tmux_server() then
    return {}, 'it names another folder or tmux server'
  end
  local agents = {}
  for _, kept in ipairs(record.agents) do
    if type(kept) == 'table' and type(kept.name) == 'string' and kept.name:match(NAME) and still_there(kept) then
      table.insert(agents, kept)
    end
  end
  return agents, #agents == 0 and 'no agent it names runs in its pane any more' or nil
end

--- At start: the port and tokens to serve again (the `start` parameters' `reuse`), when this
--- folder's record names an agent whose pane still runs it. The record is used up.
---@return table?
function M.server()
  waiting = nil
  if not tmux_server() then
    return nil
  end
  local file = path()
  local stat = vim.uv.fs_lstat(file)
  local text = stat and files.read(file, MAX_BYTES)
  if not text then
    return nil
  end
  vim.uv.fs_unlink(file) -- once: a second Neovim here starts afresh
  local ok, record = pcall(vim.json.decode, text)
  local agents, why = {}, 'not a file private to you (0600, yours)'
  if stat.type == 'file' and stat.uid == vim.uv.getuid() and stat.mode % 64 == 0 then -- none for group, others
    agents, why = verified(ok and record or nil)
  end
  if why then
    message.brief(('kept agents not taken back (%s): '):format(why), 'warn', { file })
  end
  if #agents == 0 then
    return nil
  end
  waiting, left_at = agents, record.left_at
  vim.api.nvim_create_autocmd('User', {
    pattern = 'GeminiStatusChanged',
    callback = function()
      if not require('gemini_companion.state').current.running then
        return false
      end
      M.take_back(require('gemini_companion.agents').adopt)
      return true -- once
    end,
  })
  return record.server
end

--- Whether any agent may be kept (`terminal.tmux.keep`, or an agent's own): else no record is
--- looked for.
---@return boolean
function M.wanted()
  local options = require('gemini_companion.config').options
  if options.terminal.tmux.keep then
    return true
  end
  for _, agent_spec in pairs(options.agents) do
    if agent_spec.tmux and agent_spec.tmux.keep then
      return true
    end
  end
  return false
end

--- Once the server runs: take back the agents verified at start (`adopt(kept)`: the agents
--- module's, nil and why when it cannot). Says which came back, once.
---@param adopt fun(kept: table): table?, string?
function M.take_back(adopt)
  local agents = waiting or {}
  waiting = nil
  local back = {}
  for _, kept in ipairs(agents) do
    local agent, why = adopt(kept)
    if agent then
      table.insert(back, agent)
    else
      message.brief(('kept agent %s not taken back: %s'):format(kept.name, why or '?'), 'warn')
    end
  end
  if #back == 0 then
    return
  end
  -- The CLI's old IDE connection retries for ~2.5 s after its server went: each failure it meets
  -- (the new server does not know its session) marks the IDE disconnected, a new connection too.
  local since_exit = os.time() - (type(left_at) == 'number' and left_at or 0)
  vim.defer_fn(function()
    local typed, untyped = {}, {}
    for _, agent in ipairs(back) do
      table.insert(H.reconnect(agent) and typed or untyped, agent.name)
    end
    if #typed > 0 then
      message.brief('kept agents back (typed /ide enable): ', 'info', typed)
    end
    if #untyped > 0 then
      message.brief('kept agents back (type /ide enable in each to reconnect reviews): ', 'warn', untyped)
    end
  end, math.max(0, math.min(OLD_RETRIES_S - since_exit, OLD_RETRIES_S)) * 1000)
end

--- Type `/ide enable` into the agent's prompt when it is idle and empty (nothing of the user's
--- to mix it with): neither CLI reconnects its IDE connection by itself (client-facts.md).
---@param agent gemini_companion.Agent
---@return boolean typed
function H.reconnect(agent)
  local screen = require('gemini_companion.agents.attention.screen')
  local lines = vim.split(agent.provider.screen(agent) or '', '\n', { plain = true })
  local input = screen.input(lines)
  if screen.classify(lines) ~= 'idle' or not (input and input.empty) or not agent.provider.paste(agent, IDE_ENABLE) then
    return false
  end
  local agents = require('gemini_companion.agents')
  local function current()
    return agents.get(agent.name) == agent
  end
  -- Enter once the screen has settled: Gemini completes a slash command as it is typed, and an
  -- Enter that comes before its completion caught up takes a stale suggestion ('/ide clear').
  local last, still, checks = nil, 0, 0
  require('gemini_companion.poll').every(SETTLE_MS, function()
    checks = checks + 1
    local now = current() and agent.provider.screen(agent)
    still = (now and now == last) and still + 1 or 0
    last = now
    if not now or still >= SETTLED_CHECKS or checks >= MAX_CHECKS then
      if now and screen.typed(vim.split(now, '\n', { plain = true })) == IDE_ENABLE then
        require('gemini_companion.agents.submit').enter(agent, current)
      elseif now then -- the user typed meanwhile: their text is not sent with ours
        message.brief(agent.name .. ': type /ide enable in it to reconnect reviews', 'warn')
      end
      return true
    end
  end)
  return true
end

--- Whether a running agent stays when Neovim exits.
---@param agent gemini_companion.Agent
---@return boolean
function M.keeps(agent)
  local config = require('gemini_companion.config').options.terminal.tmux
  local own = agent.spec.tmux or {}
  local keep = own.keep
  if keep == nil then
    keep = config.keep
  end
  return keep == true and agent.pane ~= nil and not agent.exited
end

--- At exit: write the record of the agents that stay (`agents`), with the server's port and
--- tokens. False (and the agents are to be stopped as usual) when it cannot be written.
---@param agents gemini_companion.Agent[]
---@return boolean
function M.record(agents)
  local host = require('gemini_companion.host')
  local server = host.request('kept_server', nil, 2000)
  if type(server) ~= 'table' or type(server.port) ~= 'number' then
    return false
  end
  local record =
    { cwd = vim.fn.getcwd(-1, -1), tmux = tmux_server(), server = server, agents = {}, left_at = os.time() }
  for _, agent in ipairs(agents) do
    local proc = vim.api.nvim_get_proc(agent.pid)
    table.insert(record.agents, {
      name = agent.name,
      pane = agent.pane,
      pid = agent.pid,
      process = proc and proc.name,
      cli = agent.cli,
      version = agent.version,
      gemini_pid = agent.gemini_pid,
      qwen_port = agent.qwen_port,
      hidden = agent.hidden or false,
    })
  end
  local file = path()
  vim.fn.mkdir(vim.fs.dirname(file), 'p', tonumber('700', 8))
  local ok, err = files.write(file, vim.json.encode(record), tonumber('600', 8))
  if not ok then
    message.notify(('kept agents: cannot write %s: %s'):format(file, err or '?'), 'error')
  end
  return ok
end

return M
