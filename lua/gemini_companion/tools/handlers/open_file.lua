--- open_file: show the user a file in an editor window (the focus stays; never trusted).
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')
local hidden = require('gemini_companion.tools.hidden')
local paths = require('gemini_companion.tools.paths')

return function(args, done)
  if not require('gemini_companion.config').options.tools.open_file then
    return done(nil, 'open_file is turned off in this editor (tools.open_file)')
  end
  local target = nil
  local previous = vim.fn.win_getid(vim.fn.winnr('#'))
  for _, win in ipairs({ vim.api.nvim_get_current_win(), previous, unpack(vim.api.nvim_tabpage_list_wins(0)) }) do
    local buf = win ~= 0 and vim.api.nvim_win_get_buf(win)
    if buf and vim.bo[buf].buftype == '' and vim.api.nvim_win_get_config(win).relative == '' then
      target = win
      break
    end
  end
  local buf = paths.loaded_buffer(args.path, args.buffers)
  if not buf then
    local err
    buf, err = hidden.load(args.path, args.file, args.roots)
    if not buf then
      return done(nil, err)
    end
  end
  if hidden.ours[buf] then -- shown to the user: theirs from now on, with a swap file as they set
    hidden.ours[buf] = nil
    vim.bo[buf].swapfile = vim.go.swapfile
  end
  vim.bo[buf].buflisted = true
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  if not target then -- only the agent on screen: a split beside it, focus stays
    target = vim.api.nvim_open_win(buf, false, { split = 'left', win = -1 })
  end
  local ok, werr = pcall(vim.api.nvim_win_set_buf, target, buf)
  if not ok then
    return done(nil, tostring(werr))
  end
  if vim.api.nvim_buf_get_changedtick(buf) ~= tick and not buffer_bytes.answers(buf, args.file) then
    -- Shown, the file's time was checked and 'autoread' reloaded it through what its name points
    -- at now: not the bytes tools.py read. It goes, as it came.
    pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = true })
    return done(nil, ("'%s' changed while it was being opened"):format(paths.relative(args.path, args.roots)))
  end
  local line = math.min(args.line or 1, vim.api.nvim_buf_line_count(buf))
  vim.api.nvim_win_set_cursor(target, { line, 0 })
  vim.api.nvim_win_call(target, function()
    vim.cmd('normal! zz')
  end)
  done({ opened = paths.relative(args.path, args.roots), line = line })
end
