--- The CLIs' own user settings, written only with consent: `:GeminiCompanion enable-cli`
--- turns IDE mode on (`ide.enabled`, `ide.hasSeenNudge`) in the file the CLI itself reads,
--- merged atomically with everything in it, keeping its mode; `disable-cli` takes back exactly
--- what was written (a key we added is removed, a value we changed is restored). What was
--- written is remembered in Neovim's state directory. Gemini CLI has no other way for a normal
--- user (it ignores a system-defaults file it does not find root-owned); Qwen gets IDE mode per
--- session anyway (qwen_defaults.lua), so its user file only matters for a Qwen started outside.
local json_file = require('gemini_companion.json_file')
local message = require('gemini_companion.message')

local M = {}

local WANT = { 'ide.enabled', 'ide.hasSeenNudge' }
M.clis = { 'gemini', 'qwen' }

--- The user settings file the CLI reads.
---@param cli 'gemini'|'qwen'
---@return string
function M.path(cli)
  if cli == 'gemini' then
    local home = vim.env.GEMINI_CLI_HOME
    return ((home and home ~= '') and home or vim.env.HOME) .. '/.gemini/settings.json'
  end
  local home = vim.env.QWEN_HOME
  return ((home and home ~= '') and home or (vim.env.HOME .. '/.qwen')) .. '/settings.json'
end

---@return string
local function journal_path()
  return vim.fn.stdpath('state') .. '/gemini-companion/cli-settings.json'
end

--- The user said No to the question before `:Gemini` (asked once).
---@param cli string
---@return string
local function declined_path(cli)
  return vim.fn.stdpath('state') .. '/gemini-companion/declined-' .. cli
end

--- The edit itself runs in Python (settings_edit.py): it keeps the file's key order and layout.
---@param verb 'enable'|'disable'
---@param cli 'gemini'|'qwen'
---@return string[]? changes, string? error
local function edit(verb, cli)
  local host = require('gemini_companion.host')
  local python = host.python()
  if vim.fn.executable(python) == 0 then
    python = 'python3' -- the script needs the standard library only
  end
  local script = host.root .. '/rplugin/python3/gemini_companion/settings_edit.py'
  local argv = { python, script, verb, M.path(cli), journal_path() }
  vim.list_extend(argv, WANT)
  local ok, result = pcall(function()
    return vim.system(argv, { text = true }):wait(10000)
  end)
  local decoded, out = pcall(vim.json.decode, ok and result.stdout or '')
  if not decoded or type(out) ~= 'table' then
    return nil, ('cannot edit %s: %s'):format(M.path(cli), ok and vim.trim(result.stderr or '') or tostring(result))
  end
  if out.error then
    return nil, out.error
  end
  return out.changes
end

--- `ide.enabled` in the CLI's user settings: true, false (the user turned it off: `/ide
--- disable` writes that), or nil (not set, or the file cannot be read).
---@param cli 'gemini'|'qwen'
---@return boolean?
function M.ide_enabled(cli)
  local settings = json_file.read(M.path(cli))
  local ide = settings and settings.ide
  if type(ide) == 'table' and type(ide.enabled) == 'boolean' then
    return ide.enabled
  end
end

--- Turn IDE mode on in the CLI's user settings; returns what changed (one line each).
---@param cli 'gemini'|'qwen'
---@return string[]? changes, string? error
function M.enable(cli)
  return edit('enable', cli)
end

--- Take back exactly what `enable` wrote; returns what changed.
---@param cli 'gemini'|'qwen'
---@return string[]? changes, string? error
function M.disable(cli)
  return edit('disable', cli)
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

---@param cli string
---@param declined? boolean
local function remember_decline(cli, declined)
  if declined then
    vim.fn.mkdir(vim.fs.dirname(declined_path(cli)), 'p')
    vim.fn.writefile({}, declined_path(cli))
  else
    vim.uv.fs_unlink(declined_path(cli))
  end
end

--- Before the plugin starts Gemini CLI: IDE mode must be on in its user settings (no other
--- layer works for it). Per `cli_settings`: 'ask' once, 'auto', or 'never'. A user's own
--- `ide.enabled: false` is never overwritten here.
---@param cli 'gemini'|'qwen'|nil
---@param mode 'ask'|'auto'|'never'
function M.before_start(cli, mode)
  if cli ~= 'gemini' or mode == 'never' then
    return -- Qwen: IDE mode comes with the session's defaults file
  end
  local now = M.ide_enabled(cli)
  if now == true then
    return
  end
  local path = vim.fn.fnamemodify(M.path(cli), ':~')
  if now == false then
    return message.brief(('IDE mode is off in %s: /ide enable in the CLI turns it on'):format(path), 'warn')
  end
  if mode == 'ask' then
    if vim.uv.fs_stat(declined_path(cli)) then
      return
    end
    local question = (
      'Gemini CLI connects to Neovim only with IDE mode on in %s.\n'
      .. 'Write ide.enabled and ide.hasSeenNudge there? (:GeminiCompanion disable-cli undoes it)'
    ):format(path)
    if vim.fn.confirm(question, '&Yes\n&No', 1) ~= 1 then
      remember_decline(cli, true)
      return message.brief('not changed; :GeminiCompanion enable-cli gemini does it later')
    end
  end
  remember_decline(cli, nil)
  local changes, err = M.enable(cli)
  if not changes then
    return message.brief(err or '?', 'error')
  end
  message.brief(('IDE mode on in %s (:GeminiCompanion disable-cli undoes it)'):format(path))
end

--- `:GeminiCompanion enable-cli|disable-cli [cli]`
---@param verb 'enable'|'disable'
---@param cli? string
function M.command(verb, cli)
  for _, name in ipairs(cli and { cli } or M.clis) do
    if not vim.tbl_contains(M.clis, name) then
      return message.notify(('unknown CLI %q (gemini, qwen)'):format(name), 'error')
    end
    if
      verb == 'enable'
      and M.ide_enabled(name) == false
      and vim.fn.confirm(('%s: you turned IDE mode off. Turn it on?'):format(M.path(name)), '&Yes\n&No', 2) ~= 1
    then
      message.notify(('%s: left as it is (ide.enabled: false)'):format(M.path(name)))
    else
      remember_decline(name, nil)
      local changes, err = M[verb](name)
      if not changes then
        message.notify(err or '?', 'error')
      elseif #changes == 0 then
        message.notify(('%s: nothing to change'):format(M.path(name)))
      else
        message.notify(('%s: %s'):format(M.path(name), table.concat(changes, ', ')))
      end
    end
  end
end

return M
