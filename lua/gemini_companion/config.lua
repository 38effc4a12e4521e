---@class gemini_companion.Config
---@field auto_start boolean Start the server when Neovim starts.
---@field workspace_folders string[]|fun():string[] Extra workspace roots besides Neovim's working directories.
---@field diff gemini_companion.DiffConfig How proposed edits are shown.
---@field context gemini_companion.ContextConfig What the agent sees of your editor.

---@field agents table<string, gemini_companion.AgentSpec> The agents `:Gemini {name}` runs.
---@field default_agent string The agent `:Gemini` runs without a name.
---@field terminal gemini_companion.TerminalConfig Where agents run.
---@field cli_settings 'ask'|'auto'|'never' Turning IDE mode on in Gemini CLI's user settings before `:Gemini` starts it.
---@field tools gemini_companion.ToolsConfig The model's editor tools.
---@field changes gemini_companion.ChangesConfig What agents changed, turn by turn.
---@field resume 'ask'|'always'|'never' What an agent's first `:Gemini` in a new Neovim does with the workspace's last conversation.
---@field notify gemini_companion.NotifyConfig One line when an agent you are not looking at needs you.

---@class gemini_companion.NotifyConfig
---@field waiting boolean When an agent starts waiting for you (a permission, a question).
---@field finished boolean When an agent ends a turn (with the files it changed).

---@class gemini_companion.ChangesConfig
---@field enabled boolean Register the CLIs' turn hooks (Qwen's session defaults, Gemini's enable-cli).
---@field max_turns integer Turns kept (older snapshots are pruned).
---@field max_file_kb integer Files larger than this are listed as skipped, not tracked.

---@class gemini_companion.ToolsConfig
---@field enabled boolean Register the editor tools with the CLIs (Qwen's session defaults, Gemini's enable-cli).
---@field trust boolean Mark the read-only tools trusted, so the CLI does not ask before each call.
---@field open_file boolean Let the model show you a file (never trusted: the CLI asks first).

---@class gemini_companion.AgentSpec
---@field cmd string[] The command line (no shell).
---@field env? table<string, string> Added to the agent's environment.
---@field window? gemini_companion.WindowConfig This agent's window, over `terminal.window`.
---@field provider? 'native'|'tmux'|'external' Where this agent runs, over `terminal.provider`.
---@field tmux? gemini_companion.TmuxConfig This agent's pane, over `terminal.tmux`.
---@field external? gemini_companion.ExternalConfig This agent's program, over `terminal.external`.

---@class gemini_companion.WindowConfig
---@field position 'right'|'left'|'bottom'|'top'|'float'|'tab'
---@field size number Columns or lines of a split; below 1: a fraction of the screen.
---@field width number A float's width (below 1: fraction of the screen).
---@field height number A float's height (below 1: fraction of the screen).
---@field border string|string[] A float's border (see nvim_open_win()).

---@class gemini_companion.TmuxConfig
---@field position 'right'|'left'|'bottom'|'top' Beside Neovim's pane.
---@field size string|integer Cells, or a percentage ('40%').

---@class gemini_companion.ExternalConfig
---@field cmd? string[]|fun(cmd: string[]): string[] The program; the word '{cmd}' becomes the agent's command.

---@class gemini_companion.TerminalConfig
---@field provider 'native'|'tmux'|'external' A Neovim terminal, a tmux pane beside Neovim, or a program of yours.
---@field window gemini_companion.WindowConfig
---@field tmux gemini_companion.TmuxConfig
---@field external gemini_companion.ExternalConfig
---@field close_on_exit boolean Close an agent's window when its process exits.
---@field back string|false Terminal-mode key, in an agent's window, back to the last editor window.

---@class gemini_companion.DiffConfig
---@field layout 'vertical'|'horizontal' Original and proposal side by side, or one above the other.
---@field focus boolean Switch to a diff's tab when it opens (false: open it in the background and say so).

---@class gemini_companion.ContextConfig
---@field enabled boolean Share open files, cursor and selection with connected clients.
---@field debounce_ms integer Wait this long after a change before sending the new state.
---@field max_files integer Share at most this many files, most recently focused first.
---@field max_selection_bytes integer Cut the shared selection to this many bytes (0: share no selection).
---@field filter? fun(bufnr: integer): boolean Return false to keep a buffer out of the context.
---@field is_trusted? boolean Tell the clients whether the workspace is trusted (nil: say nothing).

local message = require('gemini_companion.message')

local M = {}

local CONTEXT_KEYS =
  { enabled = true, debounce_ms = true, max_files = true, max_selection_bytes = true, filter = true, is_trusted = true }

---@type gemini_companion.Config
M.defaults = {
  auto_start = true,
  workspace_folders = {},
  diff = {
    layout = 'vertical',
    focus = true,
  },
  context = {
    enabled = true,
    debounce_ms = 50,
    max_files = 10,
    max_selection_bytes = 16384,
  },
  agents = {
    gemini = { cmd = { 'gemini' } },
    qwen = { cmd = { 'qwen' } },
  },
  default_agent = 'gemini',
  cli_settings = 'ask',
  tools = { enabled = true, trust = true, open_file = true },
  changes = { enabled = true, max_turns = 20, max_file_kb = 1024 },
  notify = { waiting = true, finished = true },
  resume = 'ask',
  terminal = {
    provider = 'native',
    window = { position = 'right', size = 0.4, width = 0.8, height = 0.8, border = 'rounded' },
    tmux = { position = 'right', size = '40%' },
    external = {},
    close_on_exit = true,
    back = '<C-\\><C-w>',
  },
}

---@type gemini_companion.Config
M.options = vim.deepcopy(M.defaults)

---@param name string
---@param value any
---@param expected string
---@param ok boolean
local function check(name, value, expected, ok)
  if not ok then
    error(message.prefixed(('option %s: expected %s, got %s'):format(name, expected, vim.inspect(value))), 0)
  end
end

---@param value any
---@param min integer
---@return boolean
local function integer_from(value, min)
  return type(value) == 'number' and value == math.floor(value) and value >= min
end

---@param name string
---@param given table
---@param known table
local function no_unknown_keys(name, given, known)
  for key in pairs(given) do
    if known[key] == nil then
      error(message.prefixed(('unknown option %s%s'):format(name, key)), 0)
    end
  end
end

local POSITIONS = { right = true, left = true, bottom = true, top = true, float = true, tab = true }
local PROVIDERS = { native = true, tmux = true, external = true }

---@param name string
---@param where table? {provider?, tmux?, external?}: a terminal's or an agent's
local function check_provider(name, where)
  where = where or {}
  if where.provider ~= nil then
    check(name .. 'provider', where.provider, "'native', 'tmux' or 'external'", PROVIDERS[where.provider])
  end
  local tmux = where.tmux or {}
  check(name .. 'tmux', tmux, 'a table', type(tmux) == 'table')
  no_unknown_keys(name .. 'tmux.', tmux, M.defaults.terminal.tmux)
  if tmux.position ~= nil then
    local ok = POSITIONS[tmux.position] and tmux.position ~= 'float' and tmux.position ~= 'tab'
    check(name .. 'tmux.position', tmux.position, 'right, left, bottom or top', ok)
  end
  local size = tmux.size
  local size_ok = size == nil or integer_from(size, 1) or (type(size) == 'string' and size:match('^%d+%%?$') ~= nil)
  check(name .. 'tmux.size', size, "cells or a percentage ('40%')", size_ok)
  local external = where.external or {}
  check(name .. 'external', external, 'a table', type(external) == 'table')
  no_unknown_keys(name .. 'external.', external, { cmd = true })
  local cmd = external.cmd
  check(
    name .. 'external.cmd',
    cmd,
    'a list of strings or a function',
    cmd == nil or type(cmd) == 'function' or (vim.islist(cmd) and #cmd > 0)
  )
end

---@param name string
---@param window table
local function check_window(name, window)
  no_unknown_keys(name .. '.', window, M.defaults.terminal.window)
  if window.position ~= nil then
    check(name .. '.position', window.position, 'right, left, bottom, top, float or tab', POSITIONS[window.position])
  end
  for _, key in ipairs({ 'size', 'width', 'height' }) do
    local value = window[key]
    check(name .. '.' .. key, value, 'a number > 0', value == nil or (type(value) == 'number' and value > 0))
  end
end

--- Merge `opts` over the defaults; raises a readable error naming a wrong option.
--- (Hand-written checks: vim.validate's signature differs between Neovim 0.10 and 0.11.)
---@param opts? table
function M.set(opts)
  opts = opts or {}
  check('opts', opts, 'a table', type(opts) == 'table')
  no_unknown_keys('', opts, M.defaults)
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  local diff, context = merged.diff, merged.context
  check('auto_start', merged.auto_start, 'a boolean', type(merged.auto_start) == 'boolean')
  local folders = merged.workspace_folders
  check(
    'workspace_folders',
    folders,
    'a list of paths or a function',
    type(folders) == 'function' or vim.islist(folders)
  )
  check('diff', diff, 'a table', type(diff) == 'table')
  no_unknown_keys('diff.', diff, M.defaults.diff)
  check(
    'diff.layout',
    diff.layout,
    "'vertical' or 'horizontal'",
    diff.layout == 'vertical' or diff.layout == 'horizontal'
  )
  check('diff.focus', diff.focus, 'a boolean', type(diff.focus) == 'boolean')
  check('context', context, 'a table', type(context) == 'table')
  no_unknown_keys('context.', context, CONTEXT_KEYS)
  check('context.enabled', context.enabled, 'a boolean', type(context.enabled) == 'boolean')
  check('context.debounce_ms', context.debounce_ms, 'an integer >= 0', integer_from(context.debounce_ms, 0))
  check('context.max_files', context.max_files, 'an integer >= 1', integer_from(context.max_files, 1))
  local cap = context.max_selection_bytes
  check('context.max_selection_bytes', cap, 'an integer >= 0', integer_from(cap, 0))
  check('context.filter', context.filter, 'a function', context.filter == nil or type(context.filter) == 'function')
  local trusted = context.is_trusted
  check('context.is_trusted', trusted, 'a boolean', trusted == nil or type(trusted) == 'boolean')
  check('agents', merged.agents, 'a table', type(merged.agents) == 'table')
  for name, agent in pairs(merged.agents) do
    local key = 'agents.' .. tostring(name)
    check(key, agent, 'a table', type(name) == 'string' and name:match('^[%w_.-]+$') ~= nil and type(agent) == 'table')
    no_unknown_keys(
      key .. '.',
      agent,
      { cmd = true, env = true, window = true, provider = true, tmux = true, external = true }
    )
    local cmd = agent.cmd
    check(
      key .. '.cmd',
      cmd,
      'a non-empty list of strings',
      vim.islist(cmd) and #cmd > 0 and vim.iter(cmd):all(function(arg)
        return type(arg) == 'string'
      end)
    )
    check(key .. '.env', agent.env, 'a table of strings', agent.env == nil or type(agent.env) == 'table')
    check(key .. '.window', agent.window, 'a table', agent.window == nil or type(agent.window) == 'table')
    check_window(key .. '.window', agent.window or {})
    check_provider(key .. '.', agent)
  end
  check('default_agent', merged.default_agent, 'the name of an agent', merged.agents[merged.default_agent] ~= nil)
  local mode = merged.cli_settings
  check('cli_settings', mode, "'ask', 'auto' or 'never'", mode == 'ask' or mode == 'auto' or mode == 'never')
  local resume = merged.resume
  check('resume', resume, "'ask', 'always' or 'never'", resume == 'ask' or resume == 'always' or resume == 'never')
  local tools = merged.tools
  check('tools', tools, 'a table', type(tools) == 'table')
  no_unknown_keys('tools.', tools, M.defaults.tools)
  for _, key in ipairs({ 'enabled', 'trust', 'open_file' }) do
    check('tools.' .. key, tools[key], 'a boolean', type(tools[key]) == 'boolean')
  end
  local changes = merged.changes
  check('changes', changes, 'a table', type(changes) == 'table')
  no_unknown_keys('changes.', changes, M.defaults.changes)
  check('changes.enabled', changes.enabled, 'a boolean', type(changes.enabled) == 'boolean')
  for _, key in ipairs({ 'max_turns', 'max_file_kb' }) do
    local value = changes[key]
    check('changes.' .. key, value, 'a positive integer', type(value) == 'number' and value >= 1 and value % 1 == 0)
  end
  local notify = merged.notify
  check('notify', notify, 'a table', type(notify) == 'table')
  no_unknown_keys('notify.', notify, M.defaults.notify)
  for _, key in ipairs({ 'waiting', 'finished' }) do
    check('notify.' .. key, notify[key], 'a boolean', type(notify[key]) == 'boolean')
  end
  local terminal = merged.terminal
  check('terminal', terminal, 'a table', type(terminal) == 'table')
  no_unknown_keys('terminal.', terminal, M.defaults.terminal)
  check_window('terminal.window', terminal.window)
  check_provider('terminal.', terminal)
  check('terminal.close_on_exit', terminal.close_on_exit, 'a boolean', type(terminal.close_on_exit) == 'boolean')
  check('terminal.back', terminal.back, 'a key or false', terminal.back == false or type(terminal.back) == 'string')
  M.options = merged
end

return M
