--- A followed buffer's undo file ('undofile') brought up to date with its reload, so that the
--- history is there when the file is opened again. Writing it hashes the whole text (`:wundo`
--- held the main loop 25 ms at 5 MB, over 100 ms at 20 MB): a large buffer's is written when it
--- is let go instead (unloaded, Neovim leaving), while it still holds the file; a `:w` or a
--- reading of the file writes or reads it as Neovim does, and nothing is left to do.
local M = {}

-- Bytes of text whose undo file is written at once (its hash a few ms).
local AT_ONCE = 1024 * 1024

local behind = {} ---@type table<integer, true> large buffers whose undo file is behind
local group ---@type integer?
local write, watch -- below the public function

--- `buf` (unmodified, 'undofile') holds its file's new text: its undo file follows, now or when
--- it is let go.
---@param buf integer
function M.follow(buf)
  local lines = vim.api.nvim_buf_line_count(buf)
  if vim.api.nvim_buf_get_offset(buf, lines) <= AT_ONCE then
    behind[buf] = nil
    return write(buf)
  end
  behind[buf] = true
  watch()
end

--- Write `buf`'s undo file, for the file it holds.
---@param buf integer
function write(buf)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent! wundo ' .. vim.fn.fnameescape(vim.fn.undofile(vim.api.nvim_buf_get_name(buf))))
  end)
end

--- The events that end a buffer's wait: let go (written, if it still holds its file), written or
--- read again by Neovim (nothing to do).
function watch()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup('gemini_companion.follow.undofile', { clear = true })
  local function let_go(buf)
    if behind[buf] and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified and vim.bo[buf].undofile then
      pcall(write, buf)
    end
    behind[buf] = nil
  end
  vim.api.nvim_create_autocmd('BufUnload', {
    group = group,
    callback = function(ev)
      let_go(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = group,
    callback = function()
      for buf in pairs(behind) do
        let_go(buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufWritePost', 'BufReadPost' }, {
    group = group,
    callback = function(ev)
      if vim.fn.fnamemodify(ev.file, ':p') == vim.api.nvim_buf_get_name(ev.buf) then -- (not a copy elsewhere)
        behind[ev.buf] = nil
      end
    end,
  })
end

return M
