-- enable-cli / disable-cli on a real file in a temporary GEMINI_CLI_HOME (the runner's HOME and
-- XDG directories are temporary too).
local cli_settings = require('gemini_companion.agents.cli_settings')

local function fresh(text, mode)
  local home = vim.fn.tempname()
  vim.fn.mkdir(home .. '/.gemini', 'p')
  vim.env.GEMINI_CLI_HOME = home
  local path = home .. '/.gemini/settings.json'
  if text then
    vim.fn.writefile({ text }, path)
    vim.uv.fs_chmod(path, mode or tonumber('640', 8))
  end
  return path
end

--- enable or disable, waited for (the edit runs off the main loop): what changed, or nil and why.
local function edit(verb)
  local out
  cli_settings[verb]('gemini', nil, function(changes, err)
    out = { changes, err }
  end)
  assert(
    vim.wait(30000, function()
      return out ~= nil
    end),
    verb .. ' answers'
  )
  return out[1], out[2]
end

local function read(path)
  return vim.json.decode(table.concat(vim.fn.readfile(path), '\n'))
end

return {
  enable_merges_and_keeps_every_other_key_and_the_mode = function()
    local path = fresh('{"model": {"name": "x"}, "ide": {"hasSeenNudge": false}}')
    local changes = assert(edit('enable'))
    -- ide.enabled, ide.hasSeenNudge, two tool servers, five hooks (three of turns, two of state),
    -- the hooksConfig.disabled item that keeps them off outside Neovim
    assert(#changes == 10, vim.inspect(changes))
    assert(vim.deep_equal(read(path).hooksConfig.disabled, { '${GEMINI_COMPANION_HOOK_ID:-gemini-companion}' }))
    local after = read(path)
    assert(after.model.name == 'x' and after.ide.enabled == true and after.ide.hasSeenNudge == true)
    assert(#cli_settings.missing('gemini') == 0, vim.inspect(cli_settings.missing('gemini')))
    assert(vim.uv.fs_stat(path).mode % 4096 == tonumber('640', 8))
    assert(cli_settings.ide_enabled('gemini') == true)
  end,
  disable_takes_back_exactly_what_was_written = function()
    local path = fresh('{"model": {"name": "x"}, "ide": {"hasSeenNudge": false}}')
    assert(edit('enable'))
    assert(edit('disable'))
    assert(
      vim.deep_equal(read(path), { model = { name = 'x' }, ide = { hasSeenNudge = false } }),
      vim.inspect(read(path))
    )
    assert(#assert(edit('disable')) == 0) -- nothing left to undo
  end,
  gemini_tool_entries_expand_to_nothing_outside_neovim_and_only_read_only_ones_are_trusted = function()
    local path = fresh('{}')
    assert(edit('enable'))
    local servers = read(path).mcpServers
    assert(servers.neovim.httpUrl == '${GEMINI_COMPANION_MCP_URL:-}', vim.inspect(servers))
    assert(servers.neovim.headers.Authorization == 'Bearer ${GEMINI_COMPANION_MCP_TOKEN:-}')
    assert(servers.neovim.trust == true and vim.deep_equal(servers.neovim.excludeTools, { 'open_file' }))
    assert(
      servers['neovim-open'].trust == false and vim.deep_equal(servers['neovim-open'].includeTools, { 'open_file' })
    )
    assert(servers.neovim.alwaysLoadTools == nil) -- Qwen's key only
  end,
  a_users_own_server_of_the_same_name_comes_back_and_a_value_they_changed_since_stays = function()
    local path = fresh('{"mcpServers": {"neovim": {"command": "mine"}, "other": {"command": "x"}}}')
    assert(edit('enable'))
    local after = read(path)
    after.ide.hasSeenNudge = false -- the user's own change after enable
    vim.fn.writefile({ vim.json.encode(after) }, path)
    local changes = assert(edit('disable'))
    assert(#changes == 9, vim.inspect(changes)) -- hasSeenNudge is the user's now
    local restored = read(path)
    assert(restored.mcpServers.neovim.command == 'mine' and restored.mcpServers.other.command == 'x')
    assert(restored.mcpServers['neovim-open'] == nil and restored.ide.enabled == nil)
    assert(restored.ide.hasSeenNudge == false, vim.inspect(restored))
  end,
  hooks_are_appended_beside_the_users_own_and_taken_back_alone = function()
    local mine = { hooks = { { type = 'command', command = 'echo mine' } } }
    local path = fresh(vim.json.encode({ hooks = { BeforeAgent = { mine } } }))
    assert(edit('enable'))
    local before_agent = read(path).hooks.BeforeAgent
    assert(#before_agent == 2 and before_agent[1].hooks[1].command == 'echo mine', vim.inspect(before_agent))
    assert(before_agent[2].hooks[1].command:find('GEMINI_COMPANION_HOOK', 1, true))
    assert(#read(path).hooks.AfterAgent == 1)
    assert(#cli_settings.missing('gemini') == 0)
    assert(edit('disable'))
    local after = read(path).hooks
    assert(vim.deep_equal(after, { BeforeAgent = { mine } }), vim.inspect(after))
  end,
  the_users_own_disabled_hooks_stay_beside_our_item_and_get_their_bytes_back = function()
    local text = '{  "hooksConfig": {    "disabled": ["my-hook"],    "notifications": true  }}' -- one line: fresh()
    local path = fresh(text)
    assert(edit('enable'))
    local ours = require('gemini_companion.changes').off_outside_neovim()
    assert(vim.deep_equal(read(path).hooksConfig, { disabled = { 'my-hook', ours }, notifications = true }))
    assert(edit('disable'))
    assert(table.concat(vim.fn.readfile(path), '\n') == text, table.concat(vim.fn.readfile(path), '\n'))
  end,
  earlier_hook_entries_of_ours_are_replaced_by_enable_and_all_taken_out_by_disable = function()
    local function old(event, timeout) -- what earlier versions wrote: it eval'ed the environment
      local command = ('[ -z "$GEMINI_COMPANION_HOOK" ] || eval "$GEMINI_COMPANION_HOOK %s"'):format(event)
      return { hooks = { { type = 'command', command = command, timeout = timeout } } }
    end
    local elsewhere = vim.deepcopy(require('gemini_companion.changes').hooks('gemini').AfterTool) -- another checkout
    elsewhere.hooks[1].command = elsewhere.hooks[1].command:gsub("'/[^']*/hook%.py'", "'/elsewhere/hook.py'")
    local mine = { hooks = { { type = 'command', command = 'echo mine' } } }
    local hooks = {
      BeforeAgent = { mine, old('turn-start', 10000) },
      AfterTool = { old('tool', 3000), elsewhere },
      AfterAgent = { old('turn-end', 60000), old('turn-end', 10000) },
    }
    local path = fresh(vim.json.encode({ hooks = hooks }))
    local missing = table.concat(cli_settings.missing('gemini'), ' ')
    assert(missing:find('hooks.AfterTool-', 1, true) and missing:find('hooks.AfterTool+', 1, true), missing)
    assert(edit('enable'))
    local now = read(path).hooks
    assert(#now.BeforeAgent == 2 and now.BeforeAgent[1].hooks[1].command == 'echo mine', vim.inspect(now))
    assert(#now.AfterTool == 1 and #now.AfterAgent == 1, vim.inspect(now))
    for _, list in pairs(now) do
      for _, item in ipairs(list) do
        assert(not item.hooks[1].command:find('eval', 1, true) and not item.hooks[1].command:find('elsewhere'))
      end
    end
    assert(#cli_settings.missing('gemini') == 0, vim.inspect(cli_settings.missing('gemini')))
    assert(edit('disable'))
    assert(vim.deep_equal(read(path).hooks, { BeforeAgent = { mine } }), vim.inspect(read(path).hooks))
    -- Written by a Neovim whose journal this one does not have: disable takes them out all the same
    -- (the lists they leave empty stay: without a record they may have been the user's).
    path = fresh(vim.json.encode({ hooks = hooks }))
    assert(edit('disable'))
    local left = read(path).hooks
    assert(vim.deep_equal(left, { BeforeAgent = { mine }, AfterTool = {}, AfterAgent = {} }), vim.inspect(left))
  end,
  tools_turned_off_register_nothing = function()
    require('gemini_companion.config').set({ tools = { enabled = false } })
    local path = fresh('{}')
    assert(edit('enable'))
    require('gemini_companion.config').set({})
    assert(read(path).mcpServers == nil)
  end,
  a_missing_file_is_created_private_and_removed_keys_leave_no_empty_table = function()
    local path = fresh(nil)
    assert(edit('enable'))
    assert(vim.uv.fs_stat(path).mode % 4096 == tonumber('600', 8))
    assert(edit('disable'))
    assert(vim.deep_equal(read(path), vim.empty_dict()) or next(read(path)) == nil)
  end,
  enable_then_disable_gives_back_the_same_bytes = function()
    local text = '{\r\n\t"theme": "x",\r\n\t"n": 1.0e3,\r\n\t"s": "\\u00e9",\r\n\t"ide": {}\r\n}'
    local path = fresh(nil)
    local file = assert(io.open(path, 'wb'))
    file:write(text)
    file:close()
    assert(edit('enable'))
    local enabled = require('gemini_companion.files').read(path)
    assert(enabled:find('\r\n\t\t"enabled": true', 1, true) and not enabled:find('[^\r]\n'), enabled)
    assert(edit('disable'))
    assert(require('gemini_companion.files').read(path) == text, require('gemini_companion.files').read(path))
  end,
  a_file_with_comments_is_read_edited_and_given_back_byte_for_byte = function()
    -- As Gemini 0.61 reads it (issue 31): comments anywhere, the object we add to holding one.
    local text = '// my settings\n{\n  "url": "http://x", /* { " */\n  "ide": { // later\n  }, // tail\n'
      .. '  "ui": { "theme": "x" }\n} /* open'
    local path = fresh(nil)
    local file = assert(io.open(path, 'wb'))
    file:write(text)
    file:close()
    assert(cli_settings.ide_enabled('gemini') == nil and #cli_settings.missing('gemini') > 0)
    assert(edit('enable'))
    assert(#cli_settings.missing('gemini') == 0, vim.inspect(cli_settings.missing('gemini')))
    assert(cli_settings.ide_enabled('gemini') == true)
    local enabled = require('gemini_companion.files').read(path)
    for _, note in ipairs({ '// my settings\n', '/* { " */', '{ // later\n', '// tail\n', '/* open' }) do
      assert(enabled:find(note, 1, true), note .. ' in ' .. enabled)
    end
    assert(edit('disable'))
    assert(require('gemini_companion.files').read(path) == text, require('gemini_companion.files').read(path))
    -- Not JSON even with comments (a trailing comma): refused, left as it is.
    path = fresh('{\n  "a": 1, // mine\n}')
    local changes, err = edit('enable')
    assert(changes == nil and err:find('not valid JSON', 1, true), err)
    assert(table.concat(vim.fn.readfile(path), '\n'):find('// mine', 1, true))
  end,
  the_users_own_false_is_seen = function()
    fresh('{"ide": {"enabled": false}}')
    assert(cli_settings.ide_enabled('gemini') == false)
    require('gemini_companion.agents.cli_settings.ask').before_start('gemini', 'auto', nil, function() end) -- never overwritten without asking
    assert(cli_settings.ide_enabled('gemini') == false)
  end,
}
