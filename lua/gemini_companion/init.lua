--- gemini-companion.nvim: IDE mode for Gemini CLI and Qwen Code inside Neovim.
-- Startup loads this file only (plugin/ and setup()); the rest loads on first use.
local M = {}

local function config()
  return require('gemini_companion.config')
end

local function state()
  return require('gemini_companion.state')
end

local pending = nil ---@type {opts: table?}? setup()'s options during startup, checked at first use

-- How long a stop waits for the host (it takes milliseconds): a host stopped or stuck is ended then,
-- its discovery files left to the next start's sweep (their PID is gone).
local STOP_MS = 5000

---@param opts? gemini_companion.Config
function M.setup(opts)
  if package.loaded['gemini_companion.config'] or vim.v.vim_did_enter == 1 then
    config().set(opts)
  else -- startup: kept, and checked when the options are first read (config.lua takes them)
    pending = { opts = opts }
  end
  if vim.v.vim_did_enter == 1 then
    M.autostart()
  end
end

--- setup()'s options from startup, once: config.lua checks them as it loads.
---@return {opts: table?}?
function M.take_pending()
  local taken = pending
  pending = nil
  return taken
end

--- Start unless disabled, already started, or already failed to start. Quiet: a plugin
--- that is not built yet says so on first use, never at startup.
function M.autostart()
  local host = require('gemini_companion.host')
  if config().options.auto_start and not host.started and not host.problem and vim.v.exiting == vim.NIL then
    M.start(true)
  end
  vim.schedule(require('gemini_companion.agents.cli_settings').replace_stale_hooks)
end

--- Workspace roots: every working directory in use (global, then per tab) plus configured
--- folders. Python resolves, checks and de-duplicates them (launch.clean_roots).
---@return string[]
function M.workspace()
  local roots = { vim.fn.getcwd(-1, -1) }
  for tabnr = 1, vim.fn.tabpagenr('$') do
    table.insert(roots, vim.fn.getcwd(-1, tabnr))
  end
  local extra = config().options.workspace_folders
  if type(extra) == 'function' then
    extra = extra()
  end
  for _, folder in ipairs(extra or {}) do
    table.insert(roots, vim.fn.fnamemodify(vim.fn.expand(folder), ':p'))
  end
  return roots
end

---@param quiet? boolean
function M.start(quiet)
  local host = require('gemini_companion.host')
  local log = require('gemini_companion.log').settings()
  local kept = require('gemini_companion.agents.kept')
  local reuse = kept.wanted() and kept.server() or nil -- agents an earlier Neovim left running here
  local params = { nvim_pid = vim.fn.getpid(), workspace = M.workspace(), log = log, reuse = reuse }
  local _, err = host.notify('start', params, quiet)
  state().start_asked = not err
  if not err then
    local changes = config().options.changes
    host.notify('changes_config', {
      state_dir = vim.fn.stdpath('state') .. '/gemini-companion/changes',
      max_turns = changes.max_turns,
      max_file_bytes = changes.max_file_kb * 1024,
    })
    require('gemini_companion.agents.qwen_defaults').ensure()
    if config().options.context.enabled then
      require('gemini_companion.context').attach()
    end
    if config().options.follow.enabled then
      require('gemini_companion.follow').start()
    end
  end
end

--- Synchronous: the discovery files are gone when this returns.
function M.stop()
  local host = require('gemini_companion.host')
  state().start_asked = false
  if vim.v.exiting ~= vim.NIL and package.loaded['gemini_companion.agents'] then
    require('gemini_companion.agents').leave() -- kept agents are recorded while the server runs
  end
  if package.loaded['gemini_companion.context'] then
    require('gemini_companion.context').detach()
  end
  if package.loaded['gemini_companion.follow'] then
    require('gemini_companion.follow').stop()
  end
  if package.loaded['gemini_companion.agents.qwen_defaults'] then
    require('gemini_companion.agents.qwen_defaults').remove()
  end
  if host.alive() then
    state().update(host.request('stop', nil, STOP_MS))
  end
end

function M.restart()
  M.stop()
  M.start()
end

function M.refresh_workspace()
  local host = require('gemini_companion.host')
  if host.alive() and state().current.state ~= 'stopped' then
    host.notify('workspace', { workspace = M.workspace() })
  end
end

--- The server's state as a table (a copy): running, state, error, port, pid, workspace,
--- discovery_files, clients, diffs, python. Costs no RPC; safe in a statusline.
---@return gemini_companion.Status
function M.status()
  local status = vim.deepcopy(state().current)
  local agents = package.loaded['gemini_companion.agents'] -- none ran otherwise
  status.agents = agents and agents.list() or {}
  return status
end

--- A short statusline string: each agent and its state, the open reviews, the files the last
--- turn changed, with highlight groups (`GeminiStatus*`); `{plain = true}`: without them (lualine).
--- Cached, rebuilt on the plugin's User events: a call is a table read.
---@param opts? {plain?: boolean}
---@return string
function M.statusline(opts)
  return require('gemini_companion.agents.statusline').get(opts)
end

--- Human-readable status lines (`:GeminiCompanion status`).
---@return string[]
function M.status_lines()
  return require('gemini_companion.command').status_lines()
end

---@return string[]
function M.subcommand_names()
  return require('gemini_companion.command').names()
end

--- `:GeminiCompanion {subcommand} [arg]`.
---@param subcommand? string
---@param arg? string
function M.command(subcommand, arg)
  require('gemini_companion.command').run(subcommand, arg)
end

return M
