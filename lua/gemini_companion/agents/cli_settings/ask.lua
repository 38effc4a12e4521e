--- Asking before the CLIs' user settings are written: once before `:Gemini` starts Gemini CLI
--- (`cli_settings = 'ask'`; an explicit Yes only, a No remembered per file), and the
--- `:GeminiCompanion enable-cli|disable-cli` commands, which say what changed in each file.
local cli_settings = require('gemini_companion.agents.cli_settings')
local message = require('gemini_companion.message')

local M = {}
local H = {}

--- Before the plugin starts Gemini CLI: IDE mode must be on, and the tools registered, in its
--- user settings (no other layer works for it). Per `cli_settings`: 'ask' once, 'auto', or
--- 'never'. A user's own `ide.enabled: false` is never overwritten here. `done()` once the
--- settings are as they will be: at once when nothing is written, else after the edit (it runs
--- off the main loop).
---@param cli 'gemini'|'qwen'|nil
---@param mode 'ask'|'auto'|'never'
---@param agent_env? table<string, string> the agent's own environment: it may name its own folder
---@param done fun()
function M.before_start(cli, mode, agent_env, done)
  if cli ~= 'gemini' or mode == 'never' then
    return done() -- Qwen: IDE mode comes with the session's defaults file
  end
  local missing = cli_settings.missing(cli, agent_env)
  if #missing == 0 then
    return done()
  end
  local path = vim.fn.fnamemodify(cli_settings.path(cli, agent_env), ':~')
  if cli_settings.ide_enabled(cli, agent_env) == false then
    message.brief(('IDE mode is off in %s: /ide enable in the CLI turns it on'):format(path), 'warn')
    return done()
  end
  if mode == 'ask' then
    if vim.uv.fs_stat(H.declined_path(cli, agent_env)) then
      return done()
    end
    local question = (
      'Gemini CLI connects to Neovim, and finds the editor tools, only through %s.\n'
      .. 'Write %s there? (:GeminiCompanion disable-cli undoes it)'
    ):format(path, table.concat(missing, ', '))
    local answer = H.yes(question)
    if not answer then
      H.remember_decline(cli, agent_env, answer == false or nil) -- no UI is no answer: asked again next time
      local said = 'not changed; later: :GeminiCompanion enable-cli gemini'
      if answer == nil then
        message.notify(said) -- nothing on screen: the whole line, in :messages
      else
        message.brief(said)
      end
      return done()
    end
  end
  H.remember_decline(cli, agent_env, nil)
  cli_settings.enable(cli, agent_env, function(changes, err)
    if not changes then
      message.brief(err or '?', 'error')
    else
      message.brief(('IDE mode and editor tools set in %s (:GeminiCompanion disable-cli undoes it)'):format(path))
    end
    done()
  end)
end

--- `:GeminiCompanion enable-cli|disable-cli [cli]`: each settings file the plugin may start that
--- CLI with (the user's, and configured agents' own). The edits are asked for at once, in order
--- (they run one after the other, off the main loop: a second command's after the first's), and
--- each says what changed when it is done.
---@param verb 'enable'|'disable'
---@param cli? string
function M.command(verb, cli)
  for _, name in ipairs(cli and { cli } or cli_settings.clis) do
    if not vim.tbl_contains(cli_settings.clis, name) then
      return message.notify(('unknown CLI %q (gemini, qwen)'):format(name), 'error')
    end
    local files, took_back = cli_settings.settings_files(name), false
    for i, file in ipairs(files) do
      if
        verb == 'enable'
        and cli_settings.ide_enabled(name, file.env) == false
        and not H.yes(('%s: you turned IDE mode off. Turn it on?'):format(file.path))
      then
        message.notify(('%s: left as it is (ide.enabled: false)'):format(file.path))
      else
        H.remember_decline(name, file.env, nil)
        cli_settings[verb](name, file.env, function(changes, err)
          if not changes then
            message.notify(err or '?', 'error')
          elseif #changes == 0 then
            message.notify(('%s: nothing to change'):format(file.path))
          else
            message.notify(('%s: %s'):format(file.path, table.concat(changes, ', ')))
            took_back = took_back or verb == 'disable'
          end
          if i == #files and took_back then
            H.still_held(name)
          end
        end)
      end
    end
  end
end

--- Consent is an answer: true only for an explicit Yes; false for No, <Esc> or <C-c>; nil
--- when there is nobody to ask (headless, or --embed before a UI attached).
---@param question string
---@return boolean?
function H.yes(question)
  if #vim.api.nvim_list_uis() == 0 then
    return nil
  end
  local ok, choice = pcall(vim.fn.confirm, question, '&Yes\n&No', 0) -- no default: <CR> is no answer
  return ok and choice == 1 or false
end

---@param cli string
---@param agent_env? table<string, string>
---@param declined? boolean
function H.remember_decline(cli, agent_env, declined)
  local path = H.declined_path(cli, agent_env)
  if declined then
    vim.fn.mkdir(vim.fs.dirname(path), 'p')
    vim.fn.writefile({}, path)
  else
    vim.uv.fs_unlink(path)
  end
end

--- A running Gemini CLI keeps the settings it started with and writes them back whole when it
--- saves one of its own (`/vim`, `/model`, a theme: measured with 0.61.0), bringing back what
--- disable-cli took out. Name the agents of that CLI Neovim runs, to restart.
---@param cli 'gemini'|'qwen'
function H.still_held(cli)
  local agents = package.loaded['gemini_companion.agents'] -- none ran otherwise
  local names = {}
  for _, item in ipairs(agents and agents.list() or {}) do
    local agent = agents.get(item.name)
    if agent and agent.cli == cli then
      table.insert(names, item.name)
    end
  end
  if #names > 0 then
    message.notify(
      ('%s still runs with the old settings and writes them back if it saves one: /quit it, start anew'):format(
        table.concat(names, ', ')
      ),
      'warn'
    )
  end
end

--- The user said No to the question before `:Gemini` (asked once per settings file).
---@param cli string
---@param agent_env? table<string, string>
---@return string
function H.declined_path(cli, agent_env)
  local path = cli_settings.path(cli, agent_env)
  local own = path ~= cli_settings.path(cli) and ('-' .. vim.fn.sha256(path):sub(1, 16)) or '' -- an agent's own
  return vim.fn.stdpath('state') .. '/gemini-companion/declined-' .. cli .. own
end

return M
