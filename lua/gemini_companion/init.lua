--- gemini-companion.nvim: IDE mode for Gemini CLI and Qwen Code inside Neovim.
local config = require('gemini_companion.config')
local host = require('gemini_companion.host')
local state = require('gemini_companion.state')

local M = {}

-- How long a stop waits for the host (it takes milliseconds): a host stopped or stuck is ended then,
-- its discovery files left to the next start's sweep (their PID is gone).
local STOP_MS = 5000

---@param opts? gemini_companion.Config
function M.setup(opts)
  config.set(opts)
  if vim.v.vim_did_enter == 1 then
    M.autostart()
  end
end

--- Start unless disabled, already started, or already failed to start. Quiet: a plugin
--- that is not built yet says so on first use, never at startup.
function M.autostart()
  if config.options.auto_start and not host.started and not host.problem and vim.v.exiting == vim.NIL then
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
  local extra = config.options.workspace_folders
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
  local _, err = host.notify('start', { nvim_pid = vim.fn.getpid(), workspace = M.workspace() }, quiet)
  state.start_asked = not err
  if not err then
    local changes = config.options.changes
    host.notify('changes_config', {
      state_dir = vim.fn.stdpath('state') .. '/gemini-companion/changes',
      max_turns = changes.max_turns,
      max_file_bytes = changes.max_file_kb * 1024,
    })
    require('gemini_companion.agents.qwen_defaults').ensure()
    if config.options.context.enabled then
      require('gemini_companion.context').attach()
    end
    if config.options.follow.enabled then
      require('gemini_companion.follow').start()
    end
  end
end

--- Synchronous: the discovery files are gone when this returns.
function M.stop()
  state.start_asked = false
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
    state.update(host.request('stop', nil, STOP_MS))
  end
end

function M.restart()
  M.stop()
  M.start()
end

function M.refresh_workspace()
  if host.alive() and state.current.state ~= 'stopped' then
    host.notify('workspace', { workspace = M.workspace() })
  end
end

--- The server's state as a table (a copy): running, state, error, port, pid, workspace,
--- discovery_files, clients, diffs, python. Costs no RPC; safe in a statusline.
---@return gemini_companion.Status
function M.status()
  local status = vim.deepcopy(state.current)
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
  return require('gemini_companion.agents.attention').statusline(opts)
end

--- Human-readable status lines.
---@return string[]
function M.status_lines()
  local s = state.current
  local lines = { require('gemini_companion.message').prefixed(s.state) }
  local function add(label, value)
    table.insert(lines, ('  %-16s %s'):format(label, value))
  end
  if s.error then
    add('error', s.error)
  end
  add('port', s.port or '-')
  add('IDE PID', s.pid or '-')
  add('workspace', #s.workspace > 0 and table.concat(s.workspace, ', ') or '-')
  for i, file in ipairs(s.discovery_files) do
    add(i == 1 and 'discovery files' or '', file)
  end
  for i, problem in ipairs(s.discovery_errors or {}) do
    add(i == 1 and 'discovery errors' or '', problem)
  end
  if s.running and #(s.discovery_errors or {}) > 0 then -- each error names the CLI it leaves out
    local blocked = table.concat(s.discovery_errors, '\n')
    local served = vim.tbl_filter(function(cli)
      return not blocked:find(cli .. ' cannot find', 1, true)
    end, { 'Gemini CLI', 'Qwen Code' })
    add(
      'serves',
      ('%s only (a fixed directory is picked up by the next sweep, or by :GeminiCompanion start)'):format(
        table.concat(served, ', ')
      )
    )
  end
  if #s.clients == 0 then
    add('clients', 'none connected')
  end
  for i, client in ipairs(s.clients) do
    add(i == 1 and 'clients' or '', ('%s (session %s)'):format(client.label or client.name, client.session))
  end
  add('open diffs', #s.diffs)
  add('Python host', s.python or host.python())
  local diff = package.loaded['gemini_companion.review'] -- no diff was ever open otherwise
  for i, path in ipairs(diff and diff.orphaned() or {}) do
    add(i == 1 and 'orphaned diffs' or '', path .. ' (:GeminiAccept! writes it, :q drops it)')
  end
  return lines
end

--- `:GeminiCompanion {subcommand}`: the one table behind the command, its completion and its error.
M.subcommands = {
  start = function()
    M.start()
  end,
  stop = M.stop,
  restart = M.restart,
  conflict = function()
    require('gemini_companion.follow.conflict').open()
  end,
  status = function()
    vim.api.nvim_echo({ { table.concat(M.status_lines(), '\n') } }, false, {})
  end,
  ['enable-cli'] = function(cli)
    require('gemini_companion.agents.cli_settings').command('enable', cli)
  end,
  ['disable-cli'] = function(cli)
    require('gemini_companion.agents.cli_settings').command('disable', cli)
  end,
  install = function()
    host.install(function(ok)
      if ok then
        M.restart()
      end
    end)
  end,
}

---@return string[]
function M.subcommand_names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

---@param subcommand? string
---@param arg? string
function M.command(subcommand, arg)
  local run = M.subcommands[subcommand or 'status']
  if not run then
    local known = table.concat(M.subcommand_names(), ', ')
    return require('gemini_companion.message').notify(('unknown subcommand %q (%s)'):format(subcommand, known), 'error')
  end
  run(arg)
end

return M
