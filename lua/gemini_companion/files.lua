--- Whole files, read and written: one reader and one atomic writer for every module.
local M = {}

-- Read whole, at most: a file this large is refused, not read into Neovim's memory.
M.MAX_BYTES = 64 * 1024 * 1024
-- Open never waits: a FIFO would for a writer (it is refused below, as any file that is not
-- regular: a device such as /dev/zero would never end).
M.READ_NOW = vim.uv.constants.O_RDONLY + (vim.uv.constants.O_NONBLOCK or 0)

--- The bytes of the regular file at `path` (links followed), judged on the file opened; nil and
--- why when it cannot be read (missing, say), is not a regular file, or is over `limit` bytes.
---@param path string
---@param limit? integer default M.MAX_BYTES
---@return string? text, string? why
function M.read(path, limit)
  limit = limit or M.MAX_BYTES
  local fd, err = vim.uv.fs_open(path, M.READ_NOW, 0)
  if not fd then
    return nil, err
  end
  local stat = vim.uv.fs_fstat(fd)
  local text, why
  if not stat or stat.type ~= 'file' then
    why = 'not a regular file'
  elseif stat.size > limit then
    why = ('larger than %d MiB'):format(limit / 1024 / 1024)
  else
    text, why = vim.uv.fs_read(fd, stat.size, 0)
  end
  vim.uv.fs_close(fd)
  return text, why
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
