--- Files loaded into hidden buffers for a tool (a language server needs a buffer): kept only if
--- Neovim read exactly the bytes tools.py read, and let go when the last tool using one is done.
local buffer_bytes = require('gemini_companion.tools.buffer_bytes')
local paths = require('gemini_companion.tools.paths')

local M = {}

--- Buffers `load` filled for tools and nobody has shown since: how they go when the last tool
--- call using them is done (`release`): 'wipe' (made by `load`) or 'unload' (a buffer the user
--- had, unloaded).
---@class gemini_companion.tools.Ours
---@field how 'wipe'|'unload'
---@field users integer tool calls using it now
M.ours = {} ---@type table<integer, gemini_companion.tools.Ours>

--- The buffer of `path` (not loaded yet), loaded hidden from `file`, the bytes tools.py read
--- inside the workspace. Neovim reads the file again by its name, and a symlink swapped in since
--- makes that another file: so it reads with every autocommand held back (no language server,
--- no plugin sees the text) and no swap file (none written beside the file, no prompt for one
--- there), the buffer is kept only if it holds exactly `file.data`, and only then is its filetype
--- detected (the `filetypedetect` BufReadPost autocommands, then FileType, which starts language
--- servers): no BufEnter, no BufWinEnter, no other plugin's BufRead.
---@param path string
---@param file gemini_companion.tools.File
---@param roots string[]
---@return integer? buf
---@return string? err
function M.load(path, file, roots)
  if not file.data then
    return nil, file.error
  end
  local changed = ("'%s' changed while it was being opened"):format(paths.relative(path, roots))
  if file.partial then -- read_buffer's range only: never a buffer's whole text
    return nil, changed
  end
  local ignore = vim.o.eventignore
  vim.o.eventignore = 'all' -- not even BufNew/BufAdd: nobody sees this buffer until it holds the file
  local ok, buf = pcall(function()
    local existed = vim.fn.bufexists(path) == 1
    local buf = vim.fn.bufadd(path)
    -- bufadd names a buffer after its folders resolved, and may return one of another name
    -- (the same file through a link): either way not the file tools.py read.
    if vim.api.nvim_buf_get_name(buf) ~= path or vim.bo[buf].buftype ~= '' then
      return nil
    end
    if vim.api.nvim_buf_is_loaded(buf) then -- loaded under this very name: the user's, or ours
      if M.ours[buf] then -- loaded by a call still running (made since this one began): shared
        if not buffer_bytes.answers(buf, file) then
          return nil
        end
        M.ours[buf].users = M.ours[buf].users + 1
      end
      return buf
    end
    -- No swap file: none written for a file only a tool reads, no prompt for another's. Set
    -- again only when the user is shown the buffer (open_file).
    vim.bo[buf].swapfile = false
    if not pcall(vim.fn.bufload, buf) or not buffer_bytes.holds(buf, file.data) then -- gone quietly, as it came
      pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = existed }) -- the user's keeps its place
      return nil
    end
    M.ours[buf] = { how = existed and 'unload' or 'wipe', users = 1 }
    return buf
  end)
  vim.o.eventignore = ignore
  if not ok or not buf then
    return nil, changed
  end
  if M.ours[buf] then
    vim.api.nvim_buf_call(buf, function()
      -- Only the detection's group: a missing one (`:filetype off`) leaves the filetype empty.
      pcall(vim.api.nvim_exec_autocmds, 'BufReadPost', { group = 'filetypedetect', buffer = buf, modeline = false })
    end)
  end
  return buf
end

--- The tool is done with `buf`: a buffer `load` filled for it goes again (unloaded, or wiped when
--- `load` made it), unless someone has shown or edited it since. Memory does not grow with the
--- number of files the model asks about; the user's buffers are never touched.
---@param buf integer?
---@param now? boolean whoever else uses it: it no longer holds the file
function M.release(buf, now)
  local own = buf and M.ours[buf]
  if not own then
    return
  end
  own.users = own.users - 1
  if own.users > 0 and not now then
    return
  end
  M.ours[buf] = nil
  if
    vim.api.nvim_buf_is_valid(buf)
    and vim.api.nvim_buf_is_loaded(buf)
    and not vim.bo[buf].modified
    and #vim.fn.win_findbuf(buf) == 0
  then
    pcall(vim.api.nvim_buf_delete, buf, { force = true, unload = own.how == 'unload' })
  end
end

return M
