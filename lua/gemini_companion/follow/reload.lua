--- An unmodified buffer made its file's new text as one change the user can undo: only the lines
--- that differ are replaced (marks, folds, signs and other extmarks stay with their text), each
--- window's cursor and view kept, and Neovim's own record of the file brought up to date so its
--- next check (focus, `:checktime`) neither asks (W11, E211) nor reads the file again.
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')

local M = {}

local ns = vim.api.nvim_create_namespace('gemini_companion.follow')

--- Whether the buffer holds exactly `text` as its file's bytes.
---@param buf integer
---@param text string
---@return boolean
function M.holds(buf, text)
  return buffer_bytes.holds(buf, text)
end

--- Make the unmodified `buf` show `text`, its file's new bytes: one undo step (`u` takes it back
--- and marks the buffer modified, `<C-r>` makes it unmodified again).
---@param buf integer
---@param text string
function M.apply(buf, text)
  local lines, eol = M.lines(buf, text)
  if not lines then
    return M.native(buf) -- an encoding or line ending Neovim must judge: its own reading
  end
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local view = vim.api.nvim_win_call(win, vim.fn.winsaveview)
    views[win] = {
      view = view,
      cursor = vim.api.nvim_buf_set_extmark(buf, ns, view.lnum - 1, 0, {}),
      top = vim.api.nvim_buf_set_extmark(buf, ns, view.topline - 1, 0, {}),
    }
  end
  local bo = vim.bo[buf]
  local modifiable = bo.modifiable
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('let &g:undolevels = &g:undolevels') -- its own undo step, joined to nothing before it
  end)
  -- Modified as the change is saved for undo: undoing it marks the buffer modified (it then
  -- differs from the file), as Neovim's own reload does.
  bo.modified, bo.modifiable = true, true
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hunks = vim.diff(table.concat(old, '\n') .. '\n', table.concat(lines, '\n') .. '\n', {
    result_type = 'indices',
  }) --[[@as integer[][] ]]
  for i = #hunks, 1, -1 do -- from the end: the line numbers above stay valid
    local a, count_a, b, count_b = unpack(hunks[i])
    local start = count_a == 0 and a or a - 1
    vim.api.nvim_buf_set_lines(buf, start, start + count_a, true, vim.list_slice(lines, b, b + count_b - 1))
  end
  bo.eol, bo.modifiable, bo.modified = eol, modifiable, false
  for win, saved in pairs(views) do
    local view = saved.view
    view.lnum = vim.api.nvim_buf_get_extmark_by_id(buf, ns, saved.cursor, {})[1] + 1
    view.topline = vim.api.nvim_buf_get_extmark_by_id(buf, ns, saved.top, {})[1] + 1
    vim.api.nvim_win_call(win, function()
      vim.fn.winrestview(view)
    end)
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  M.settle(buf)
  if bo.undofile then -- the history kept for the file as it is now
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! wundo ' .. vim.fn.fnameescape(vim.fn.undofile(vim.api.nvim_buf_get_name(buf))))
    end)
  end
end

--- Neovim's record of the file (time, size, mode) made the file's as it is now, or "gone" when it
--- is, without reading it: the FileChangedShell of this check answers nothing.
---@param buf integer
function M.settle(buf)
  local id = vim.api.nvim_create_autocmd('FileChangedShell', { buffer = buf, callback = function() end })
  local own = vim.api.nvim_get_option_value('autoread', { buf = buf, scope = 'local' })
  vim.bo[buf].autoread = false -- else an unmodified buffer is read again instead
  pcall(vim.cmd.checktime, buf)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd(own == nil and 'set autoread<' or ('setlocal %sautoread'):format(own and '' or 'no'))
  end)
  pcall(vim.api.nvim_del_autocmd, id)
end

--- `text` as the buffer's lines and 'eol', when Neovim would read it so into this buffer (UTF-8
--- without a byte order mark, its line endings); nil when only Neovim's reading can tell.
---@param buf integer
---@param text string
---@return string[]? lines, boolean eol
function M.lines(buf, text)
  local bo = vim.bo[buf]
  local fenc = bo.fileencoding
  if text == '' or bo.bomb or (fenc ~= '' and fenc ~= 'utf-8') or text:sub(1, 3) == '\239\187\191' then
    return nil, false
  end
  local eol = text:sub(-1) == '\n'
  local body = eol and text:sub(1, -2) or text
  if bo.fileformat == 'dos' then
    if (eol and body:sub(-1) ~= '\r') or body:gsub('\r\n', ''):find('[\r\n]') then
      return nil, false -- a lone CR or LF: Neovim would read it as another format
    end
    return vim.split(eol and body:sub(1, -2) or body, '\r\n', { plain = true }), eol
  elseif bo.fileformat ~= 'unix' or text:find('\r\n', 1, true) then
    return nil, false
  end
  return vim.split(body, '\n', { plain = true }), eol
end

--- Neovim's own reload (`:edit` of the file), its old text kept in the undo history.
---@param buf integer
function M.native(buf)
  local undoreload = vim.o.undoreload
  vim.o.undoreload = math.max(undoreload, vim.api.nvim_buf_line_count(buf) + 1)
  local id = vim.api.nvim_create_autocmd('FileChangedShell', {
    buffer = buf,
    callback = function()
      vim.v.fcs_choice = 'reload'
    end,
  })
  pcall(vim.cmd.checktime, buf)
  pcall(vim.api.nvim_del_autocmd, id)
  vim.o.undoreload = undoreload
end

return M
