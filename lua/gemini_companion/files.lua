--- Whole files, read and written: one reader, one in-place writer and one atomic writer for every
--- module.
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

--- Write `text` into the file at `path` in place (its owner, mode and hard links stay, as Vim's
--- `:w` keeps them), or create it. A FIFO or a device is refused, never waited on. `follow`: a
--- name the user typed, written through a link as Vim does; else a link there is refused (one
--- swapped in since the path was checked). Judged on the file opened, not only on the name.
---@param path string
---@param text string
---@param follow? boolean
---@return boolean ok, string? error
function M.write_in_place(path, text, follow)
  local info = (follow and vim.uv.fs_stat or vim.uv.fs_lstat)(path)
  local fd, err
  if not info then
    -- 0666 less the umask. Exclusive, so never through a link; but a link to nothing the user named
    -- gets its target made, as Vim does.
    local dangling = follow and vim.uv.fs_lstat(path)
    fd, err = vim.uv.fs_open(path, dangling and 'w' or 'wx', 438)
  elseif info.type ~= 'file' then
    return false, ('it is a %s now'):format(info.type)
  else
    fd, err = vim.uv.fs_open(path, vim.uv.constants.O_WRONLY + (vim.uv.constants.O_NONBLOCK or 0), 0)
  end
  if not fd then
    return false, err
  end
  local opened = vim.uv.fs_fstat(fd)
  local ok, werr = false, 'it changed as it was opened: not written'
  if opened and opened.type == 'file' and (not info or (opened.ino == info.ino and opened.dev == info.dev)) then
    ok, werr = vim.uv.fs_ftruncate(fd, 0)
    if ok then
      local written
      written, werr = vim.uv.fs_write(fd, text, 0)
      ok = written == #text
      werr = werr or (not ok and ('%d of %d bytes written'):format(written or 0, #text)) or nil
    end
  end
  vim.uv.fs_close(fd)
  return ok and true or false, not ok and werr or nil
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

--- As M.write, off the main loop (libuv's threads): `done(err)` (nil: written) in a fast event.
---@param path string
---@param text string
---@param mode integer
---@param done fun(err: string?)
function M.write_async(path, text, mode, done)
  local uv = vim.uv
  local tmp = ('%s.gemini-companion.%d.tmp'):format(path, uv.hrtime())
  local function failed(err)
    uv.fs_unlink(tmp, function()
      done(err)
    end)
  end
  uv.fs_open(tmp, 'wx', mode, function(oerr, fd)
    if not fd then
      return done(oerr)
    end
    uv.fs_write(fd, text, 0, function(werr, written)
      uv.fs_fchmod(fd, mode, function(cerr) -- the mode asked for, whatever the umask
        uv.fs_close(fd, function()
          werr = werr or cerr or (written ~= #text and 'short write' or nil)
          if werr then
            return failed(werr)
          end
          uv.fs_rename(tmp, path, function(rerr)
            if rerr then
              return failed(rerr)
            end
            done(nil)
          end)
        end)
      end)
    end)
  end)
end

--- As M.read, off the main loop (libuv's threads): `done(text, why, stat)` is called in a fast
--- event (vim.schedule before touching the editor), `stat` the opened file's. A file still being
--- written past the size it had as it was opened is "changing", not half read.
---@param path string
---@param limit integer
---@param done fun(text: string?, why: string?, stat: uv.fs_stat.result?)
function M.read_async(path, limit, done)
  vim.uv.fs_open(path, M.READ_NOW, 0, function(err, fd)
    if not fd then
      return done(nil, err)
    end
    vim.uv.fs_fstat(fd, function(_, stat)
      local function finish(text, why)
        vim.uv.fs_close(fd, function()
          done(text, why, stat)
        end)
      end
      if not stat or stat.type ~= 'file' then
        return finish(nil, 'not a regular file')
      elseif stat.size > limit then
        return finish(nil, ('larger than %d KiB'):format(limit / 1024))
      end
      vim.uv.fs_read(fd, stat.size + 1, 0, function(rerr, text)
        local grew = text and #text > stat.size
        finish(not (rerr or grew) and text or nil, rerr or (grew and 'changing' or nil))
      end)
    end)
  end)
end

return M
