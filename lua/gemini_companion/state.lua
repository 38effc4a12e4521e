--- What the Python host last told us. Reading it costs nothing, so statuslines may poll it.
local names = require('gemini_companion.env') -- the environment variables' names
local M = {}

---@class gemini_companion.Status
---@field running boolean
---@field state 'stopped'|'starting'|'running'|'failed'
---@field error string?
---@field port integer?
---@field pid integer? The IDE PID the CLIs look for (Neovim's parent process).
---@field workspace string[]
---@field discovery_files string[]
---@field discovery_errors string[] Why a discovery file could not be written (unsafe directory, ...).
---@field nvim_pid integer?
---@field host_pid integer?
---@field python string?
---@field clients {name: string, version: string, session: string, stream: boolean, label: string, agent: string?}[]
---@field diffs {id: integer, file: string, session: string, agent: string}[]
---@field tools {url: string, headers: table<string, string>}? The model's editor tools endpoint.
---@field changes {turns: integer, last: {id: integer, agent: string, files: integer, open: boolean}?}? What agents changed, by turn.
---@field agents {name: string, pid: integer, visible: boolean, state: gemini_companion.AgentState}[] Lua's own: the running agents.

---@type gemini_companion.Status
M.current = { running = false, state = 'stopped', workspace = {}, discovery_files = {}, clients = {}, diffs = {} }

local seq = 0

--- The environment last exported to terminals (false: unset).
---@type table<string, string|false>
M.env = {}

--- A start was asked of the host and not answered yet: a server is on its way (served.lua waits).
M.start_asked = false

--- A missing package is fixed by the build: the message says how (host.install_hint).
---@param text string
---@return string
local function with_fix(text)
  if text:find('cannot import', 1, true) then
    return text .. ': ' .. require('gemini_companion.host').install_hint()
  end
  return text
end

local function changed()
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiStatusChanged', modeline = false })
  -- The event's first name (it is also a command's): kept for existing autocommands.
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiCompanionStatus', modeline = false })
end

local function sync_qwen_defaults()
  local qwen_defaults = package.loaded['gemini_companion.agents.qwen_defaults'] -- none written otherwise
  if qwen_defaults then
    qwen_defaults.sync()
  end
end

--- Apply a snapshot from the host: its status and the environment terminals must inherit.
--- Snapshots are numbered; one overtaken by a newer (e.g. a synchronous reply) is dropped.
---@param snapshot {seq: integer, status: table, env: table<string, string|false>}
function M.update(snapshot)
  if type(snapshot) ~= 'table' or snapshot.seq == nil or snapshot.seq <= seq then
    return
  end
  seq = snapshot.seq
  local status, env = snapshot.status, snapshot.env
  M.start_asked = M.start_asked and status.state == 'stopped' -- starting, running or failed answer it
  for key, value in pairs(status) do
    if value == vim.NIL then
      status[key] = nil
    end
  end
  status.diffs = status.diffs or {}
  status.error = status.error and with_fix(status.error)
  M.current = status
  if not require('gemini_companion.config').options.tools.enabled then
    for key in pairs(env) do -- not told to terminals: Gemini's `${VAR:-}` entries stay inert
      env[key] = key ~= names.mcp_url and key ~= names.mcp_token and env[key]
    end
  end
  for key, value in pairs(env) do
    vim.env[key] = value or nil
  end
  M.env = env
  sync_qwen_defaults()
  changed()
end

--- A new host process numbers its snapshots from 1 again.
function M.new_host()
  seq = 0
end

--- The host cannot serve (it died, or could not start): take back what it advertised, so
--- no CLI is pointed at a dead port, and say why in the status.
---@param why string
function M.fail(why)
  M.start_asked = false
  local current = M.current
  if current.running or current.state == 'starting' then
    for _, path in ipairs(current.discovery_files or {}) do
      os.remove(path)
    end
  end
  for key in pairs(M.env) do
    vim.env[key] = nil
  end
  M.env = {}
  M.current = vim.tbl_extend('force', current, {
    running = false,
    state = 'failed',
    error = why,
    discovery_files = {},
    clients = {},
    diffs = {},
  })
  M.current.port = nil -- the dead server's port (tbl_extend cannot set a nil)
  M.current.tools = nil
  sync_qwen_defaults()
  changed()
end

---@param message string
---@param level 'debug'|'info'|'warn'|'error'
function M.notify(message, level)
  local served = package.loaded['gemini_companion.agents.served']
  if served and served.tells(with_fix(message)) then
    return -- an agent waiting for the server says it
  end
  require('gemini_companion.message').notify(with_fix(message), level, true) -- the host logged it
end

return M
