-- Config validation and the message helper: pure Lua, no server.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

--- The one-line warnings `config.set(opts)` gives, and that it did not raise.
local function warnings_of(opts)
  local said, notify = {}, vim.notify
  vim.notify = function(text, level)
    said[#said + 1] = { text = text, level = level }
  end
  local ok, err = pcall(config.set, opts)
  vim.notify = notify
  assert(ok, 'refused: ' .. tostring(err))
  return said
end

local function warns_with(opts, line)
  local said = warnings_of(opts)
  assert(#said == 1, vim.inspect(said))
  assert(said[1].text == line, ('%q is not %q'):format(said[1].text, line))
  assert(said[1].level == vim.log.levels.WARN)
end

--- The file a runtime path names, whole.
local function source(name)
  local path = vim.api.nvim_get_runtime_file(name, false)[1]
  local file = assert(io.open(assert(path, name), 'rb'))
  local text = file:read('*a')
  file:close()
  return text
end

--- Each LuaCATS class and the schema node whose fields it must list exactly ('*': an entry of a map).
local CLASSES = {
  Config = '',
  DiffConfig = 'diff',
  ContextConfig = 'context',
  ToolsConfig = 'tools',
  ChangesConfig = 'changes',
  NotifyConfig = 'notify',
  LogConfig = 'log',
  TerminalConfig = 'terminal',
  WindowConfig = 'terminal.window',
  TmuxConfig = 'terminal.tmux',
  ExternalConfig = 'terminal.external',
  AgentSpec = 'agents.*',
}

local function schema_fields(path)
  local fields = config.schema
  for name in path:gmatch('[^.]+') do
    fields = name == '*' and fields.each.fields or fields[name].fields or fields[name]
  end
  return fields
end

local function fails_with(opts, pattern)
  local ok, err = pcall(config.set, opts)
  assert(not ok, 'accepted: ' .. vim.inspect(opts))
  assert(tostring(err):find(pattern, 1, true), ('%q lacks %q'):format(tostring(err), pattern))
end

return {
  defaults_apply = function()
    config.set()
    assert(config.options.auto_start == true)
    assert(config.options.diff.layout == 'vertical')
  end,
  nested_options_merge_over_defaults = function()
    config.set({ context = { debounce_ms = 0 } })
    assert(config.options.context.debounce_ms == 0)
    assert(config.options.context.enabled == true)
  end,
  wrong_types_name_the_option = function()
    fails_with({ auto_start = 'yes' }, 'option auto_start: expected a boolean')
    fails_with({ diff = { layout = 'diagonal' } }, 'option diff.layout')
    fails_with({ context = { max_files = 0 } }, 'option context.max_files: expected an integer >= 1')
    fails_with({ context = { debounce_ms = 1.5 } }, 'context.debounce_ms')
  end,
  unknown_options_are_dropped_with_a_warning_naming_the_nearest_key = function()
    warns_with({ autostart = true }, 'gemini-companion: unknown option autostart ignored (did you mean auto_start?)')
    assert(config.options.autostart == nil and config.options.auto_start == true)
    warns_with(
      { diff = { fcous = false } },
      'gemini-companion: unknown option diff.fcous ignored (did you mean diff.focus?)'
    )
    assert(config.options.diff.focus == true and config.options.diff.fcous == nil)
    warns_with({ zzzzzzzz = 1 }, 'gemini-companion: unknown option zzzzzzzz ignored')
    warns_with(
      { agents = { x = { cmd = { 'x' }, provider = 'tmux', tmux = { side = 1 } } } },
      'gemini-companion: unknown option agents.x.tmux.side ignored (did you mean agents.x.tmux.size?)'
    )
    assert(config.options.agents.x.provider == 'tmux' and config.options.agents.x.tmux.side == nil)
    assert(#warnings_of({ diff = { focus = false } }) == 0)
  end,
  the_defaults_come_from_the_schema = function()
    config.set()
    assert(config.options.terminal.window.size == config.schema.terminal.fields.window.fields.size.default)
    assert(config.options.context.filter == nil and config.options.terminal.external.cmd == nil)
    assert(vim.deep_equal(config.options.agents, config.schema.agents.default))
  end,
  each_luacats_class_lists_exactly_its_schema_fields = function()
    local text = source('lua/gemini_companion/config.lua')
    for class, path in pairs(CLASSES) do
      local block = text:match('%-%-%-@class gemini_companion%.' .. class .. '\n(.-)\n\n')
      assert(block, 'no class ' .. class)
      local annotated = {}
      for name in block:gmatch('%-%-%-@field ([%w_]+)') do
        annotated[name] = true
      end
      local fields = schema_fields(path)
      for name in pairs(fields) do
        assert(annotated[name], ('%s has no ---@field %s'):format(class, name))
      end
      for name in pairs(annotated) do
        assert(fields[name], ('%s.%s is not in the schema'):format(class, name))
      end
    end
  end,
  the_help_names_every_option = function()
    local help = source('doc/gemini_companion.txt')
    local function walk(fields, prefix)
      for name, option in pairs(fields) do
        assert(help:find('%f[%w_]' .. name .. '%f[^%w_]'), ('the help never names option %s%s'):format(prefix, name))
        walk(option.fields or option.each and option.each.fields or {}, prefix .. name .. '.')
      end
    end
    walk(config.schema, '')
  end,
  terminal_providers_are_checked = function()
    config.set({ terminal = { provider = 'tmux', tmux = { position = 'bottom', size = '30%' } } })
    assert(config.options.terminal.tmux.size == '30%')
    fails_with({ terminal = { provider = 'screen' } }, "option terminal.provider: expected 'native', 'tmux'")
    fails_with({ terminal = { tmux = { position = 'float' } } }, 'option terminal.tmux.position')
    fails_with({ terminal = { tmux = { size = 'big' } } }, 'option terminal.tmux.size')
    fails_with({ terminal = { external = { cmd = 'kitty' } } }, 'option terminal.external.cmd')
  end,
  the_agent_window_options_are_checked = function()
    config.set({ focus_after_send = true, terminal = { auto_insert = false, keys = { normal = '<Esc><Esc>' } } })
    local terminal = config.options.terminal
    assert(config.options.focus_after_send and not terminal.auto_insert)
    assert(terminal.keys.normal == '<Esc><Esc>' and terminal.keys.window == '<C-w>') -- the other key kept
    config.set({ terminal = { keys = { window = false } } })
    assert(config.options.terminal.keys.window == false and config.options.terminal.keys.normal == false)
    fails_with({ terminal = { keys = { window = '' } } }, 'option terminal.keys.window: expected a key or false')
    fails_with({ terminal = { keys = { normal = true } } }, 'option terminal.keys.normal: expected a key or false')
    fails_with({ terminal = { auto_insert = 'yes' } }, 'option terminal.auto_insert: expected a boolean')
    fails_with({ focus_after_send = 1 }, 'option focus_after_send: expected a boolean')
  end,
  an_agents_env_holds_strings_only = function() -- a boolean there broke `:Gemini` with a traceback
    fails_with({ agents = { x = { cmd = { 'x' }, env = { GEMINI_CLI_HOME = true } } } }, 'option agents.x.env')
    fails_with({ agents = { x = { cmd = { 'x' }, env = { 'FOO=1' } } } }, 'option agents.x.env')
    fails_with({ agents = { x = { cmd = { 'x' }, env = { FOO = {} } } } }, 'option agents.x.env')
    config.set({ agents = { x = { cmd = { 'x' }, env = { FOO = '1', BAR = 2 } } } }) -- a number is its digits there
    assert(config.options.agents.x.env.FOO == '1' and config.options.agents.x.env.BAR == 2)
  end,
  numbers_are_finite = function() -- infinity passed as an integer, and the host's int() of it failed
    fails_with({ changes = { max_turns = math.huge } }, 'option changes.max_turns: expected an integer >= 1')
    fails_with({ context = { debounce_ms = math.huge } }, 'option context.debounce_ms')
    fails_with({ terminal = { window = { size = math.huge } } }, 'option terminal.window.size: expected a number > 0')
    fails_with({ terminal = { tmux = { size = math.huge } } }, 'option terminal.tmux.size')
  end,
  a_list_where_options_go_is_named_as_such = function() -- it blamed the first default it replaced
    fails_with({ changes = { 1 } }, 'option changes: expected a table of options, got { 1 }')
    fails_with({ terminal = { 'right' } }, 'option terminal: expected a table of options')
    config.set({ changes = {} })
    assert(config.options.changes.max_turns == 20)
  end,
  a_huge_unknown_key_is_named_short = function() -- it was named whole, after a distance of its length squared
    local said = warnings_of({ [string.rep('x', 1024 * 1024)] = 1 })
    assert(#said == 1 and #said[1].text < 200, #said[1].text)
    assert(said[1].text:find('unknown option xxxx', 1, true))
    assert(config.options.auto_start == true)
  end,
  an_empty_back_key_is_refused = function() -- it passed, and every agent's start then failed mapping it
    fails_with({ terminal = { back = '' } }, 'option terminal.back: expected a key or false, got ""')
    config.set({ terminal = { back = false } })
    assert(config.options.terminal.back == false)
  end,
  lists_of_strings_hold_strings = function() -- a boolean in them failed only as an agent started
    fails_with({ terminal = { external = { cmd = { 'kitty', true } } } }, 'option terminal.external.cmd')
    fails_with({ workspace_folders = { '~/a', false } }, 'option workspace_folders')
    config.set({ workspace_folders = { '~/a' }, terminal = { external = { cmd = { 'kitty', '{cmd}' } } } })
  end,
  the_prefix_is_added_once = function()
    assert(message.prefixed('x') == 'gemini-companion: x')
    assert(message.prefixed(message.prefixed('x')) == 'gemini-companion: x')
  end,
}
