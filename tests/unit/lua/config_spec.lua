-- Config validation and the message helper: pure Lua, no server.
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

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
  unknown_options_are_refused = function()
    fails_with({ autostart = true }, 'unknown option autostart')
    fails_with({ diff = { fcous = true } }, 'unknown option diff.fcous')
  end,
  terminal_providers_are_checked = function()
    config.set({ terminal = { provider = 'tmux', tmux = { position = 'bottom', size = '30%' } } })
    assert(config.options.terminal.tmux.size == '30%')
    fails_with({ terminal = { provider = 'screen' } }, "option terminal.provider: expected 'native', 'tmux'")
    fails_with({ terminal = { tmux = { position = 'float' } } }, 'option terminal.tmux.position')
    fails_with({ terminal = { tmux = { size = 'big' } } }, 'option terminal.tmux.size')
    fails_with({ agents = { x = { cmd = { 'x' }, provider = 'tmux', tmux = { side = 1 } } } }, 'agents.x.tmux.side')
    fails_with({ terminal = { external = { cmd = 'kitty' } } }, 'option terminal.external.cmd')
  end,
  the_prefix_is_added_once = function()
    assert(message.prefixed('x') == 'gemini-companion: x')
    assert(message.prefixed(message.prefixed('x')) == 'gemini-companion: x')
  end,
}
