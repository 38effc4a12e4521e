--- The CLIs' own user settings, written only with consent: `:GeminiCompanion enable-cli`
--- turns IDE mode on (`ide.enabled`, `ide.hasSeenNudge`) in the file the CLI itself reads: only
--- our keys' bytes change (settings_edit.py splices the text), through a symlink to its target,
--- keeping owner, group and mode, refused for another user's or a read-only file; `disable-cli`
--- takes back exactly what was written (a key we added is removed, a value we changed is
--- restored: the original bytes when nothing else changed). What was written is remembered in
--- Neovim's state directory, written before the file; our hook and tool entries are recognised
--- without it (by their exact shape: what held them, and IDE mode, stay and are named). Comments
--- are read as the CLIs read them (json_file.lua) and kept. 'ask' writes only after an explicit Yes (no UI, <Esc>, <C-c>: no). Gemini CLI has no other way for a normal
--- user (it ignores a system-defaults file it does not find root-owned); Qwen gets IDE mode per
--- session anyway (qwen_defaults.lua), so its user file only matters for a Qwen started outside.
local env = require('gemini_companion.env')
local json_file = require('gemini_companion.json_file')
local message = require('gemini_companion.message')

local M = {}

M.clis = { 'gemini', 'qwen' }

--- What `enable` writes: dotted key -> value (`key+`: appended to the list there). Gemini's
--- hooks (changes/hooks.lua) neither run nor show outside Neovim (`hooksConfig.disabled` names them
--- there: changes.off_outside_neovim); its tool entries name the endpoint through
--- `${VAR:-}`: outside Neovim the URL expands to nothing and Gemini skips them silently (an
--- unset `${VAR}` or a refused URL would print "MCP issues detected" at every start). Qwen
--- gets its tools per session (qwen_defaults.lua): Qwen has no `${VAR:-}`.
---@param cli 'gemini'|'qwen'
---@return table<string, any>
function M.wanted(cli)
  local want = { ['ide.enabled'] = true, ['ide.hasSeenNudge'] = true }
  if cli == 'gemini' then
    local url, authorization = '${' .. env.mcp_url .. ':-}', 'Bearer ${' .. env.mcp_token .. ':-}'
    for name, server in pairs(require('gemini_companion.tools').servers(cli, url, authorization) or {}) do
      want['mcpServers.' .. name] = server
    end
    local changes = require('gemini_companion.changes')
    local hooks = changes.hooks(cli)
    for event, entry in pairs(hooks or {}) do
      want['hooks.' .. event .. '+'] = entry -- appended: the user's own hooks stay
    end
    if hooks then
      want['hooksConfig.disabled+'] = changes.off_outside_neovim()
    end
  end
  return want
end

--- Hook entries of ours in `settings` that are not the wanted ones (an earlier version's, which
--- `eval`ed the environment, or another path's): `hooks.<Event>-` -> those entries. Whenever the
--- plugin writes the file it takes them out; `disable` takes out every one (`want` empty).
---@param settings table
---@param want table<string, any>
---@return table<string, table[]>
local function stale_hooks(settings, want)
  local stale = {}
  for event, list in pairs(type(settings.hooks) == 'table' and settings.hooks or {}) do
    for _, item in ipairs(type(list) == 'table' and list or {}) do
      if
        require('gemini_companion.changes').ours(item) and not vim.deep_equal(item, want['hooks.' .. event .. '+'])
      then
        local name = 'hooks.' .. event .. '-'
        stale[name] = stale[name] or {}
        table.insert(stale[name], item)
      end
    end
  end
  return stale
end

--- The wanted keys the file does not hold as wanted, and our stale hook entries (sorted).
---@param cli 'gemini'|'qwen'
---@return string[]
function M.missing(cli, agent_env)
  local settings, want = json_file.read(M.path(cli, agent_env)) or {}, M.wanted(cli)
  local missing = vim.tbl_keys(stale_hooks(settings, want))
  for name, value in pairs(want) do
    local now = vim.tbl_get(settings, unpack(vim.split(name:gsub('%+$', ''), '.', { plain = true })))
    local appended = name:sub(-1) == '+'
    local found = appended
      and vim.iter(type(now) == 'table' and now or {}):any(function(item)
        return vim.deep_equal(item, value)
      end)
    if not (appended and found or not appended and vim.deep_equal(now, value)) then
      table.insert(missing, name)
    end
  end
  table.sort(missing)
  return missing
end

--- The CLI's own folder: its variable (from `agent_env` first, else Neovim's) when set, else
--- ~/.gemini or ~/.qwen (GEMINI_CLI_HOME replaces the home the `.gemini` folder is in; an agent's
--- HOME is its home too). Absolute: a relative one is taken from Neovim's working directory.
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string> an agent's own environment
---@return string
function M.home(cli, agent_env)
  agent_env = agent_env or {}
  local name = cli == 'gemini' and env.gemini_home or env.qwen_home
  local home = agent_env[name] or vim.env[name]
  local user_home = agent_env.HOME or vim.env.HOME -- the CLIs' os.homedir()
  if cli == 'gemini' then
    home = ((home and home ~= '') and home or user_home) .. '/.gemini'
  else
    home = (home and home ~= '') and home or (user_home .. '/.qwen')
  end
  return (vim.fn.fnamemodify(home, ':p'):gsub('/$', '')) -- relative: from where the CLI starts
end

--- The user settings file the CLI reads (an agent's own, when its environment names its folder).
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string>
---@return string
function M.path(cli, agent_env)
  return M.home(cli, agent_env) .. '/settings.json'
end

--- Every settings file the plugin may start `cli` with: the user's, and those of configured agents
--- of that CLI whose environment names their own folder. Each with the environment that names it.
---@param cli 'gemini'|'qwen'
---@return {path: string, env: table<string, string>?}[]
function M.settings_files(cli)
  local found = { { path = M.path(cli), env = nil } }
  local agents = require('gemini_companion.config').options.agents or {}
  local names = vim.tbl_keys(agents)
  table.sort(names)
  for _, name in ipairs(names) do
    local spec = agents[name]
    local path = type(spec) == 'table'
      and type(spec.cmd) == 'table'
      and M.cli_of(name, spec.cmd) == cli
      and M.path(cli, spec.env)
    if path and not vim.iter(found):any(function(f)
      return f.path == path
    end) then
      table.insert(found, { path = path, env = spec.env })
    end
  end
  return found
end

---@return string
local function journal_path()
  return vim.fn.stdpath('state') .. '/gemini-companion/cli-settings.json'
end

--- A tool entry of ours, record or not: its URL and token are exactly our variables (as this
--- version writes them, or `${VAR}` as earlier ones did); a user's entry never reads them whole.
---@param server any
---@return boolean
local function our_server(server)
  local function names(value, variable, prefix)
    return type(value) == 'string'
      and (value == prefix .. '${' .. variable .. ':-}' or value == prefix .. '${' .. variable .. '}')
  end
  return type(server) == 'table'
    and names(server.httpUrl, env.mcp_url, '')
    and names(vim.tbl_get(server, 'headers', 'Authorization'), env.mcp_token, 'Bearer ')
end

--- Without a record of enable-cli, IDE mode may be the user's own (`/ide enable`, or a nudge
--- they accepted): it is left on, and said so once.
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string>
---@return string?
local function ide_left(cli, agent_env)
  local ide = (json_file.read(M.path(cli, agent_env)) or {}).ide
  local on = vim.tbl_filter(function(key)
    return type(ide) == 'table' and ide[key] == true
  end, { 'enabled', 'hasSeenNudge' })
  if #on > 0 then
    return ('ide.%s left true: no record that enable-cli set it, it may be yours (/ide disable turns IDE mode off)'):format(
      table.concat(on, ', ide.')
    )
  end
end

--- What settings_edit.py is asked to do, one `key=value` (or `key-=`, `key~=`) word each: our
--- stale hook entries out first (the list may then take the new one), then the wanted keys.
---@param verb 'enable'|'disable'
---@param cli 'gemini'|'qwen'
---@param only_hooks? boolean enable: only the hook entries (the rest stays as the user has it)
---@param path string the settings file
---@return string[]
local function operations(verb, cli, only_hooks, path)
  local ops = {}
  local want = verb == 'enable' and M.wanted(cli) or {}
  if only_hooks then
    for name in pairs(want) do
      want[name] = vim.startswith(name, 'hooks') and want[name] or nil -- hooks.*, hooksConfig.*
    end
  end
  local settings = json_file.read(path) or {}
  for name, items in pairs(stale_hooks(settings, want)) do
    for _, item in ipairs(items) do
      table.insert(ops, name .. '=' .. vim.json.encode(item))
    end
  end
  if verb == 'disable' then -- without a record (lost, or another Neovim's): what is plainly ours
    local off = require('gemini_companion.changes').off_outside_neovim()
    local disabled = vim.tbl_get(settings, 'hooksConfig', 'disabled')
    if type(disabled) == 'table' and vim.tbl_contains(disabled, off) then
      table.insert(ops, 'hooksConfig.disabled-=' .. vim.json.encode(off))
    end
    for name, server in pairs(type(settings.mcpServers) == 'table' and settings.mcpServers or {}) do
      if our_server(server) then
        table.insert(ops, 'mcpServers.' .. name .. '~=' .. vim.json.encode(server))
      end
    end
  end
  local names = vim.tbl_keys(want)
  table.sort(names) -- the same file whichever order `pairs` gives
  for _, name in ipairs(names) do
    table.insert(ops, name .. '=' .. vim.json.encode(want[name]))
  end
  return ops
end

--- Run settings_edit.py (standard library only: any python3 does) off the main loop; `done(answer)`
--- or `done(nil, error)` on the main loop once it ends (stopped after 10 s).
---@param argv string[] its verb, file, journal and operations
---@param path string the settings file, for the error line
---@param done fun(answer: table?, error: string?)
local function run_program(argv, path, done)
  local host = require('gemini_companion.host')
  local python = host.python()
  if vim.fn.executable(python) == 0 then
    python = 'python3'
  end
  table.insert(argv, 1, host.plugin .. '/programs/settings_edit.py')
  table.insert(argv, 1, python)
  local function answer(ok, result)
    local decoded, out = pcall(vim.json.decode, ok and result.stdout or '')
    if decoded and type(out) == 'table' then
      return done(out)
    end
    local why = ok and vim.split(vim.trim(result.stderr or ''), '\n') or { tostring(result) }
    if ok and result.code == 124 then
      why = { 'no answer in 10 s (stopped: perhaps partly written; disable-cli takes it back)' }
    elseif ok and (result.signal or 0) ~= 0 then
      why = { ('stopped (signal %d)'):format(result.signal) }
    end
    local last = why[#why] ~= '' and why[#why] or ('exit code %s'):format(ok and result.code or '?')
    done(nil, ('cannot edit %s: %s'):format(path, last))
  end
  local ok, err = pcall(vim.system, argv, { text = true, timeout = 10000 }, function(result)
    vim.schedule(function()
      answer(true, result)
    end)
  end)
  if not ok then
    vim.schedule(function()
      answer(false, err)
    end)
  end
end

--- Edits waiting for the one that runs: one at a time, in the order asked (each reads the file
--- as the one before left it).
---@type fun(release: fun())[]
local edits = {}
local editing = false

local function next_edit()
  local job = table.remove(edits, 1)
  editing = job ~= nil
  if job then
    job(next_edit)
  end
end

--- The edit itself runs in Python (settings_edit.py): it keeps the file's key order and layout.
--- After the edits asked before it; `done(changes)` or `done(nil, error)` on the main loop.
---@param verb 'enable'|'disable'
---@param cli 'gemini'|'qwen'
---@param only_hooks? boolean enable: only the hook entries (the rest stays as the user has it)
---@param agent_env? table<string, string> an agent's own environment (its own settings file)
---@param done fun(changes: string[]?, error: string?)
local function edit(verb, cli, only_hooks, agent_env, done)
  table.insert(edits, function(release)
    local path = M.path(cli, agent_env)
    local ok, argv = pcall(function()
      return vim.list_extend({ verb, path, journal_path() }, operations(verb, cli, only_hooks, path))
    end)
    if not ok then
      release()
      return done(nil, ('cannot edit %s: %s'):format(path, argv))
    end
    run_program(argv, path, function(out, err)
      release() -- the next edit reads the file as this one left it
      if not out or out.error then
        return done(nil, err or out.error)
      end
      if out.warning then
        message.notify(out.warning, 'warn')
      end
      local left = { out.left, out.unrecorded and ide_left(cli, agent_env) or nil }
      if #vim.tbl_values(left) > 0 then -- what stays and why, one line: not a change
        message.notify(('%s: %s'):format(path, table.concat(vim.tbl_values(left), '; ')))
      end
      done(out.changes)
    end)
  end)
  if not editing then
    next_edit()
  end
end

--- Whether an edit runs or waits (tests wait for the edits a command asked for).
---@return boolean
function M.busy()
  return editing
end

--- `ide.enabled` in the CLI's user settings: true, false (the user turned it off: `/ide
--- disable` writes that), or nil (not set, or the file cannot be read).
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string>
---@return boolean?
function M.ide_enabled(cli, agent_env)
  local settings = json_file.read(M.path(cli, agent_env))
  local ide = settings and settings.ide
  if type(ide) == 'table' and type(ide.enabled) == 'boolean' then
    return ide.enabled
  end
end

--- Turn IDE mode on (and register the tools) in the CLI's user settings; `done` gets what changed
--- (one line each), or nil and the error.
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string>
---@param done fun(changes: string[]?, error: string?)
function M.enable(cli, agent_env, done)
  edit('enable', cli, false, agent_env, done)
end

--- Hook entries an earlier version wrote ran what a project's `.env` said, outside Neovim too, or
--- name a hook.py that has moved since (they would track nothing), or are shown by Gemini outside
--- Neovim ("Executing Hook": no `hooksConfig.disabled` item of ours). They are ours, written after
--- the user's yes: replace them with the current entries at start,
--- touching nothing else, and say so once (not with cli_settings = 'never': then :checkhealth
--- names them).
local stale_checked = false -- once a session: a later setup() finds nothing new

function M.replace_stale_hooks()
  local config = require('gemini_companion.config').options
  if stale_checked or config.cli_settings == 'never' or not config.changes.enabled then
    return
  end
  stale_checked = true
  local settings = json_file.read(M.path('gemini'))
  local want = M.wanted('gemini')
  local ours = settings and not vim.tbl_isempty(stale_hooks(settings, {})) -- {}: every entry of ours
  local shown = ours and vim.tbl_contains(M.missing('gemini'), 'hooksConfig.disabled+')
  if not settings or (vim.tbl_isempty(stale_hooks(settings, want)) and not shown) then
    return
  end
  local path = vim.fn.fnamemodify(M.path('gemini'), ':~')
  edit('enable', 'gemini', true, nil, function(changes, err)
    if changes and #changes == 0 then
      return -- nothing could be added (a hooksConfig.disabled that is not a list stays the user's)
    elseif changes then
      message.notify(('replaced the turn hooks an earlier version wrote in %s'):format(path))
    else
      message.notify(('%s holds unsafe hooks of an earlier version: %s'):format(path, err or '?'), 'warn')
    end
  end)
end

--- Take back exactly what `enable` wrote; `done` gets what changed, or nil and the error.
---@param cli 'gemini'|'qwen'
---@param agent_env? table<string, string>
---@param done fun(changes: string[]?, error: string?)
function M.disable(cli, agent_env, done)
  edit('disable', cli, false, agent_env, done)
end

--- Which CLI an agent runs (by its name or its command), for the CLIs we know.
---@param name string
---@param cmd string[]
---@return 'gemini'|'qwen'|nil
function M.cli_of(name, cmd)
  for _, cli in ipairs(M.clis) do
    if name == cli or vim.fs.basename(cmd[1]) == cli then
      return cli
    end
  end
end

return M
