--- `:GeminiCompanion`: its subcommands (the one table behind the command, its completion and its
--- error) and the status lines it shows.
local host = require('gemini_companion.host')
local state = require('gemini_companion.state')

local M = {}

local function companion()
  return require('gemini_companion')
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
  local review = package.loaded['gemini_companion.review'] -- no review was ever open otherwise
  for i, path in ipairs(review and review.orphaned() or {}) do
    add(i == 1 and 'orphaned diffs' or '', path .. ' (:GeminiAccept! writes it, :q drops it)')
  end
  return lines
end

--- `:GeminiCompanion {subcommand}`: the one table behind the command, its completion and its error.
M.subcommands = {
  start = function()
    companion().start()
  end,
  stop = function()
    companion().stop()
  end,
  restart = function()
    companion().restart()
  end,
  status = function()
    vim.api.nvim_echo({ { table.concat(M.status_lines(), '\n') } }, false, {})
  end,
  ['enable-cli'] = function(cli)
    require('gemini_companion.agents.cli_settings.ask').command('enable', cli)
  end,
  ['disable-cli'] = function(cli)
    require('gemini_companion.agents.cli_settings.ask').command('disable', cli)
  end,
  conflict = function()
    require('gemini_companion.follow.conflict').open()
  end,
  log = function()
    require('gemini_companion.log').open()
  end,
  install = function()
    host.install(function(ok)
      if ok then
        companion().restart()
      end
    end)
  end,
}

---@return string[]
function M.names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

---@param subcommand? string
---@param arg? string
function M.run(subcommand, arg)
  local run = M.subcommands[subcommand or 'status']
  if not run then
    local known = table.concat(M.names(), ', ')
    return require('gemini_companion.message').notify(('unknown subcommand %q (%s)'):format(subcommand, known), 'error')
  end
  run(arg)
end

return M
