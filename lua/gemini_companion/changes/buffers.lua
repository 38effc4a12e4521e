--- The loaded buffer of a file a revert writes, and that buffer after the write: reloaded with
--- what it showed kept in its undo history (`u` takes the revert back), or deleted, unmodified,
--- when its file is gone.
local M = {}
local H = {}

---@param path string absolute
---@return integer? buf a loaded buffer of the file
function M.loaded(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do -- exact names (bufnr() also takes a partial match)
    local name = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf)
    if name and name ~= '' and (name == path or vim.uv.fs_realpath(name) == path) then
      return buf
    end
  end
end

--- After a revert wrote its file: reload `buf`, or delete it when the file is `gone` (a buffer
--- with unsaved edits is never deleted: such a revert was refused before).
---@param buf integer
---@param gone boolean
function M.refresh(buf, gone)
  if gone then
    pcall(vim.api.nvim_buf_delete, buf, { force = false })
  else
    H.reload(buf)
  end
end

-- Helpers ----------------------------------------------------------------------------------------

--- Reload an unmodified buffer from disk, keeping what it showed in its undo history.
---@param buf integer
function H.reload(buf)
  local undoreload = vim.o.undoreload
  vim.o.undoreload = math.max(undoreload, vim.api.nvim_buf_line_count(buf) + 1)
  pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent edit!')
  end)
  vim.o.undoreload = undoreload
end

return M
