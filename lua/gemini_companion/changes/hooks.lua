--- The shape of the hook entries both CLIs get (agents/cli_settings.lua and agents/qwen_defaults.lua
--- write them): which events run our hook, the one fixed command they run (programs/hook.py), how
--- Gemini keeps them off outside Neovim, and how an entry we wrote is told from the user's own.
local env_names = require('gemini_companion.env')
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')

local M = {}
local H = {}

--- Each CLI's hook events by what they tell hook.py: a turn's start, a tool's end, the turn's end,
--- and those that only tell the agent's state ('attention': a session start, a question for the
--- user; the CLI waits on them, Gemini before it draws its dialog, so hook.py hands them over at
--- once).
local HOOK_EVENTS = {
  gemini = {
    ['turn-start'] = { 'BeforeAgent' },
    tool = { 'AfterTool' },
    ['turn-end'] = { 'AfterAgent' },
    attention = { 'Notification', 'SessionStart' },
  },
  qwen = {
    ['turn-start'] = { 'UserPromptSubmit' },
    tool = { 'PostToolUse' },
    ['turn-end'] = { 'Stop', 'StopFailure' },
    attention = { 'PermissionRequest', 'Notification', 'PreToolUse', 'SessionStart' },
  },
}
--- How long a CLI waits on our hook, in seconds: by what it tells, an event's own over its kind's.
local SECONDS = { ['turn-start'] = 10, tool = 5, ['turn-end'] = 10, attention = 3, SessionStart = 5 }
--- A hook's timeout in the CLI's unit: Gemini's is ms, Qwen's s.
local UNIT = { gemini = 1000, qwen = 1 }

--- The command's first step: is this a terminal of a Neovim with the plugin's server? Outside
--- Neovim the key is unset and the hook ends here, at once and silently. A builtin test that
--- needs no `$` (a CLI expands `$VAR` in every settings string, from a project's `.env` too) and
--- that bash 3.2 knows.
local GATE = ('declare -p %s >/dev/null 2>&1 || exit 0; '):format(env_names.hook_key)
--- Earlier versions' hook command, which `eval`ed the environment: recognised and replaced.
local OLD_GATE = ('[ -z "$%s" ] || eval "$%s '):format(env_names.old_hook, env_names.old_hook)
--- What bash and the loader act on as they start, made inert in the hook's own environment (the
--- CLIs apply an entry's `env` over theirs, `.env` included): contract.STARTUP_ENV's twin. Each
--- emptied; PS4 gets bash's default (an empty one would change `set -x`).
local HOOK_ENV = { PS4 = '+ ' }
for _, name in ipairs({
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'LD_PRELOAD',
  'LD_AUDIT',
  'LD_LIBRARY_PATH',
  'LD_DEBUG',
  'LD_DEBUG_OUTPUT',
  'LD_PROFILE',
  'LD_PROFILE_OUTPUT',
  'DYLD_INSERT_LIBRARIES',
  'DYLD_LIBRARY_PATH',
  'DYLD_FRAMEWORK_PATH',
  'DYLD_FALLBACK_LIBRARY_PATH',
  'DYLD_FALLBACK_FRAMEWORK_PATH',
}) do
  HOOK_ENV[name] = ''
end

--- The name a CLI shows while our hooks run (Gemini: "Executing Hook: gemini-companion").
local NAME = 'gemini-companion'

local said_refused = false -- the refusal is said once per session

--- How a CLI's settings run our hooks: event -> the one entry we add to its array. The command
--- holds no `$` and runs one fixed program, the plugin's own Python isolated (`-I`: no PYTHON*
--- variable, no user site) on hook.py, which reports to this Neovim only (see hook.py). If the
--- Python or the file is gone it prints `{}` and exits 0, like hook.py itself: a hook can
--- neither fail nor block the agent (exit 127 would block Gemini's turn).
---@param cli 'gemini'|'qwen'
---@return table<string, table>? entries, nil when turned off (changes.enabled) or refused
function M.hooks(cli)
  if not require('gemini_companion.config').options.changes.enabled then
    return nil
  end
  local python = host.python()
  local py = H.shell_path(python:sub(1, 1) == '/' and python or vim.fn.exepath(python))
  local script = H.shell_path(host.plugin .. '/programs/hook.py')
  if not (py and script) then
    if not said_refused then
      said_refused = true
      local bad = vim.fn.strtrans(py and host.plugin or python) -- one line, whatever it holds
      message.notify(('turn hooks not registered: no hook command can name %s'):format(bad), 'warn')
    end
    return nil
  end
  local run = ('[[ -x %s && -f %s ]] && %s -I -S %s'):format(py, script, py, script)
  local entries = {}
  for kind, events in pairs(HOOK_EVENTS[cli]) do
    local command = ("%s%s %s || echo '{}'; exit 0"):format(GATE, run, kind)
    for _, event in ipairs(events) do
      local timeout = (SECONDS[event] or SECONDS[kind]) * UNIT[cli]
      local hook = { type = 'command', name = NAME, command = command, timeout = timeout, env = HOOK_ENV }
      entries[event] = { hooks = { hook } }
    end
  end
  return entries
end

--- Gemini's `hooksConfig.disabled` item that keeps our hooks off outside Neovim. Gemini shows
--- every hook it runs (but a system administrator's) for at least 3 s, however fast it exits;
--- it expands `${VAR:-default}` in its settings as it reads them, and runs no hook whose name
--- that list holds. The key is set only in this Neovim's terminals and its agents (there the
--- item is an opaque key, no hook's name): elsewhere it reads our hooks' name, so Gemini neither
--- runs nor shows them. Not a command: nothing here is run.
---@return string
function M.off_outside_neovim()
  return ('${%s:-%s}'):format(env_names.hook_key, NAME)
end

--- Our hooks' name (a user may list it in Gemini's `hooksConfig.disabled` to turn them off).
M.hook_name = NAME

--- Is `entry`, an item of a CLI's hook array, one the plugin wrote (any version, path, event,
--- timeout)?
---@param entry any
---@return boolean
function M.ours(entry)
  local hooks = type(entry) == 'table' and entry.hooks
  local hook = type(hooks) == 'table' and #hooks == 1 and hooks[1]
  local command = type(hook) == 'table' and hook.command
  return type(command) == 'string' and (vim.startswith(command, GATE) or vim.startswith(command, OLD_GATE))
end

-- Helpers ----------------------------------------------------------------------------------------

--- `path` in single quotes for bash; nil when it is not absolute or holds what a shell or a
--- CLI's settings would act on (`$`, quotes, a backslash, control characters).
---@param path string
---@return string?
function H.shell_path(path)
  if path:sub(1, 1) ~= '/' or path:find('[%c$\'"`\\]') then
    return nil
  end
  return "'" .. path .. "'"
end

return M
