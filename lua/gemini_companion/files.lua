--- Whole files, read and written: one reader and one atomic writer for every module.
local M = {}

--- The file's bytes; nil when it cannot be read (missing, say).
---@param path string
---@return string?
function M.read(path)
  local file = io.open(path, 'rb')
  if not file then
    return nil
  end
  local text = file:read('*a')
  file:close()
  return text
end

--- Replace `path` with `text` atomically: a new file beside it (never through a symlink), given
--- exactly `mode`, renamed into place. Nothing is left behind on failure.
---@param path string
---@param text string
---@param mode integer
---@return boolean ok, string? error
function M.write(path, text, mode)
  local tmp = ('%s.gemini-companion.%d.tmp'):format(path, vim.uv.hrtime())
  local fd, err = vim.uv.fs_open(tmp, 'wx', mode)
  if not fd then
    return false, err
  end
  local ok, werr = vim.uv.fs_write(fd, text)
  if ok then
    ok, werr = vim.uv.fs_fchmod(fd, mode) -- the mode asked for, whatever the umask
  end
  vim.uv.fs_close(fd)
  if ok then
    ok, werr = vim.uv.fs_rename(tmp, path)
  end
  if not ok then
    vim.uv.fs_unlink(tmp)
    return false, werr
  end
  return true
end

return M
