-- enable-cli / disable-cli on a real file in a temporary GEMINI_CLI_HOME (the runner's HOME and
-- XDG directories are temporary too).
local cli_settings = require('gemini_companion.cli_settings')

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

local function read(path)
  return vim.json.decode(table.concat(vim.fn.readfile(path), '\n'))
end

return {
  enable_merges_and_keeps_every_other_key_and_the_mode = function()
    local path = fresh('{"model": {"name": "x"}, "ide": {"hasSeenNudge": false}}')
    local changes = assert(cli_settings.enable('gemini'))
    assert(#changes == 2, vim.inspect(changes))
    local after = read(path)
    assert(after.model.name == 'x' and after.ide.enabled == true and after.ide.hasSeenNudge == true)
    assert(vim.uv.fs_stat(path).mode % 4096 == tonumber('640', 8))
    assert(cli_settings.ide_enabled('gemini') == true)
  end,
  disable_takes_back_exactly_what_was_written = function()
    local path = fresh('{"model": {"name": "x"}, "ide": {"hasSeenNudge": false}}')
    assert(cli_settings.enable('gemini'))
    assert(cli_settings.disable('gemini'))
    assert(
      vim.deep_equal(read(path), { model = { name = 'x' }, ide = { hasSeenNudge = false } }),
      vim.inspect(read(path))
    )
    assert(#assert(cli_settings.disable('gemini')) == 0) -- nothing left to undo
  end,
  a_missing_file_is_created_private_and_removed_keys_leave_no_empty_table = function()
    local path = fresh(nil)
    assert(cli_settings.enable('gemini'))
    assert(vim.uv.fs_stat(path).mode % 4096 == tonumber('600', 8))
    assert(cli_settings.disable('gemini'))
    assert(vim.deep_equal(read(path), vim.empty_dict()) or next(read(path)) == nil)
  end,
  a_file_with_comments_is_left_alone = function()
    local path = fresh('{\n  // mine\n  "a": 1\n}')
    local changes, err = cli_settings.enable('gemini')
    assert(changes == nil and err:find('not plain JSON', 1, true), err)
    assert(table.concat(vim.fn.readfile(path), '\n'):find('// mine', 1, true))
  end,
  the_users_own_false_is_seen = function()
    fresh('{"ide": {"enabled": false}}')
    assert(cli_settings.ide_enabled('gemini') == false)
    cli_settings.before_start('gemini', 'auto') -- never overwritten without asking
    assert(cli_settings.ide_enabled('gemini') == false)
  end,
}
