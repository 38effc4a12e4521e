--- What the Python host last told us. Reading it costs nothing, so statuslines may poll it.
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
---@field clients {name: string, version: string, session: string, stream: boolean}[]
---@field diffs table[]
---@field python string?

---@type gemini_companion.Status
M.current = { running = false, state = 'stopped', workspace = {}, discovery_files = {}, clients = {}, diffs = {} }

local seq = 0

--- The environment last exported to terminals (false: unset).
---@type table<string, string|false>
M.env = {}

--- Apply a snapshot from the host: its status and the environment terminals must inherit.
--- Snapshots are numbered; one overtaken by a newer (e.g. a synchronous reply) is dropped.
---@param snapshot {seq: integer, status: table, env: table<string, string|false>}
function M.update(snapshot)
  if type(snapshot) ~= 'table' or snapshot.seq == nil or snapshot.seq <= seq then
    return
  end
  seq = snapshot.seq
  local status, env = snapshot.status, snapshot.env
  for key, value in pairs(status) do
    if value == vim.NIL then
      status[key] = nil
    end
  end
  status.diffs = status.diffs or {}
  M.current = status
  for key, value in pairs(env) do
    vim.env[key] = value or nil
  end
  M.env = env
  vim.api.nvim_exec_autocmds('User', { pattern = 'GeminiCompanionStatus', modeline = false })
end

---@param message string
---@param level 'debug'|'info'|'warn'|'error'
function M.notify(message, level)
  vim.notify('gemini-companion: ' .. message, vim.log.levels[level:upper()] or vim.log.levels.INFO)
end

return M
