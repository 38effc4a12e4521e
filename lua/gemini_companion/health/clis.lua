--- :checkhealth's sections on what each CLI will find of the plugin in its settings: the editor
--- tools registered, the turn hooks current and able to run, the folder trusted.
local message = require('gemini_companion.message')

local health = vim.health

local M = {}
local H = {}

--- The model's editor tools: the endpoint, and whether each CLI will find them.
function M.check_tools()
  health.start(message.prefixed('editor tools for the model (:h gemini-companion-tools)'))
  local options = require('gemini_companion.config').options.tools
  if not options.enabled then
    return health.info('turned off (tools.enabled = false): no CLI is told about them')
  end
  local tools = require('gemini_companion.state').current.tools
  if tools then
    health.ok('endpoint ' .. tools.url)
  else
    health.info('no server runs: no endpoint')
  end
  local qwen = H.qwen_session_settings()
  if qwen and qwen.mcpServers then
    health.ok("Qwen Code: registered in this session's defaults file")
  elseif tools then
    health.warn('Qwen Code: the session defaults file does not name them', { ':GeminiCompanion restart' })
  end
  local cli_settings = require('gemini_companion.agents.cli_settings')
  local missing = H.gemini_missing('mcpServers.')
  local path = vim.fn.fnamemodify(cli_settings.path('gemini'), ':~')
  if #missing > 0 then
    health.warn(('Gemini CLI: %s not in %s'):format(table.concat(missing, ', '), path), {
      ':GeminiCompanion enable-cli gemini (the first :Gemini offers it)',
    })
  else
    health.ok(('Gemini CLI: registered in %s'):format(path))
  end
  local cwd = vim.fn.getcwd()
  local trusted, why = require('gemini_companion.agents.cli_settings.trust').gemini(cwd)
  if trusted == false then
    health.warn(('Gemini CLI starts no MCP server in an untrusted folder: %s (%s)'):format(cwd, why), {
      'trust the folder in Gemini (/permissions trust), then restart the agent',
    })
  elseif trusted == nil then
    health.info(('Gemini CLI: %s is not trusted yet (%s); without trust it has no tools'):format(cwd, why))
  else
    health.ok(('Gemini CLI trusts %s: %s'):format(cwd, why))
  end
end

--- What agents changed: where the turn boundaries come from, and where snapshots go.
function M.check_changes()
  health.start(message.prefixed('change review (:GeminiChanges, :h gemini-companion-changes)'))
  if not require('gemini_companion.config').options.changes.enabled then
    return health.info('turn hooks turned off (changes.enabled = false): :GeminiChanges mark sets turns by hand')
  end
  if vim.fn.executable('git') == 0 then
    return health.error('git is not on PATH: no snapshots, no change list', { 'install git' })
  end
  local cwd = vim.fn.getcwd()
  -- The work tree as snapshot.py finds it (the folder holding the nearest .git): no git is run
  -- in the user's repository, whose config could name programs.
  local top = vim.fs.root(cwd, '.git')
  if top then
    health.ok(('snapshots of the git work tree %s: a private repository (yours is only read)'):format(top))
  else
    health.ok(('%s is outside git: snapshots go to a private repository under %s'):format(cwd, vim.fn.stdpath('state')))
  end
  local qwen = H.qwen_session_settings()
  if qwen and qwen.hooks then
    health.ok("Qwen Code: turn hooks in this session's defaults file")
  end
  H.gemini_hooks(cwd)
  health.info('a CLI the plugin did not start runs the hooks only when started from a Neovim terminal')
end

--- Will Gemini CLI run the turn hooks here: registered, current, not disabled, in a trusted folder.
---@param cwd string
function H.gemini_hooks(cwd)
  local cli_settings = require('gemini_companion.agents.cli_settings')
  local missing = H.gemini_missing('hooks.')
  local fallback = 'until then, turns start with :GeminiChanges mark and with prompts sent by :GeminiSend!'
  local stale = vim.tbl_filter(function(key)
    return key:sub(-1) == '-'
  end, missing)
  if #stale > 0 then -- an earlier version's entry ran what a project's .env said
    health.warn(
      ('Gemini CLI: %s holds turn hooks of another version of the plugin'):format(cli_settings.path('gemini')),
      { ':GeminiCompanion enable-cli gemini replaces them (disable-cli removes them)' }
    )
  elseif #missing > 0 then
    health.warn(('Gemini CLI: no turn hooks in %s'):format(vim.fn.fnamemodify(cli_settings.path('gemini'), ':~')), {
      ':GeminiCompanion enable-cli gemini',
      fallback,
    })
  elseif vim.tbl_contains(H.gemini_disabled(), require('gemini_companion.changes').hook_name) then
    -- Gemini's `/hooks enable|enable-all|disable-all` write back the list as read: our item expanded.
    health.warn(
      ('Gemini CLI runs none of the turn hooks: hooksConfig.disabled in %s lists %s'):format(
        vim.fn.fnamemodify(cli_settings.path('gemini'), ':~'),
        require('gemini_companion.changes').hook_name
      ),
      { 'take that item out (/hooks enable in Gemini), then :GeminiCompanion enable-cli gemini', fallback }
    )
  elseif #H.gemini_missing('hooksConfig.') > 0 then -- written before the item existed
    health.warn(
      ('Gemini CLI shows the turn hooks outside Neovim too: no hooksConfig.disabled item in %s'):format(
        vim.fn.fnamemodify(cli_settings.path('gemini'), ':~')
      ),
      { ':GeminiCompanion enable-cli gemini adds it (the next start does, but with cli_settings = "never")' }
    )
  elseif require('gemini_companion.agents.cli_settings.trust').gemini(cwd) ~= true then
    health.warn('Gemini CLI runs no hooks in a folder it does not trust (see the tools section)', { fallback })
  else
    health.ok('Gemini CLI: turn hooks registered, and the folder is trusted')
  end
end

--- This session's Qwen defaults file, as written (nil: none).
---@return table?
function H.qwen_session_settings()
  local path = require('gemini_companion.agents.qwen_defaults').path
  return path and require('gemini_companion.json_file').read(path)
end

--- The keys under `prefix` enable-cli would still have to write into Gemini's settings.
---@param prefix string
---@return string[]
function H.gemini_missing(prefix)
  return vim.tbl_filter(function(key)
    return vim.startswith(key, prefix)
  end, require('gemini_companion.agents.cli_settings').missing('gemini'))
end

--- Gemini's `hooksConfig.disabled` list, as its user settings hold it ({} for none).
---@return any[]
function H.gemini_disabled()
  local path = require('gemini_companion.agents.cli_settings').path('gemini')
  local disabled = vim.tbl_get(require('gemini_companion.json_file').read(path) or {}, 'hooksConfig', 'disabled')
  return type(disabled) == 'table' and disabled or {}
end

return M
