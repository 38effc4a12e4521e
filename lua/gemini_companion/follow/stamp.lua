--- Neovim's record of a buffer's file (its time, size and mode, and the time `:w` checks before
--- it asks "changed since reading it") made the file's as it is now, without reading the file: a
--- `:write` that a BufWriteCmd of ours answers by doing nothing, after which Neovim takes the
--- file's stat as written (bufwrite.c: ml_timestamp). A stat, where Neovim's own reading of the
--- file is a pass over all of it (13 ms of the main loop per MB). Only where that `:write` can do
--- nothing else: no other BufWriteCmd that may match the file, the event not ignored, 'write'
--- on; elsewhere the caller lets Neovim read.
local disk = require('gemini_companion.review.disk')

local M = {}

local foreign, ignored -- below the public function

--- Make Neovim's record of the unmodified `buf`'s file that of the file as the buffer holds it,
--- `sig` (its stat signature when the buffer's text was read). true: done; false: the file
--- changed as it was done (the record may be of the newer file); nil: not done (the record as it
--- was: the caller lets Neovim read the file).
---@param buf integer
---@param sig string
---@return boolean?
function M.stamp(buf, sig)
  local name = vim.api.nvim_buf_get_name(buf)
  if vim.bo[buf].modified or not vim.o.write or ignored(vim.o.eventignore) or foreign(buf, name) then
    return nil
  elseif vim.fn.state():find('x') then
    return nil -- inside an autocommand (a callback run by its vim.wait): ours would not run, and the write would
  elseif disk.signature(name) ~= sig then
    return nil -- changed since it was read: Neovim's reading takes it as it is now
  end
  local ran = false
  local id = vim.api.nvim_create_autocmd('BufWriteCmd', {
    buffer = buf,
    callback = function()
      ran = true -- (the buffer is unmodified: Neovim takes the write as done)
    end,
  })
  pcall(vim.api.nvim_buf_call, buf, function()
    -- The window Neovim asks whether it ignores the event is this one.
    local own = vim.fn.exists('+eventignorewin') == 1 and vim.wo.eventignorewin or ''
    if not ignored(own) then
      -- 'acwrite': should ours not run after all, Neovim refuses the write (E676) instead of writing.
      local buftype = vim.bo.buftype
      vim.cmd('noautocmd setlocal buftype=acwrite')
      pcall(vim.cmd, 'lockmarks keepalt keepjumps silent write!') -- (!: a 'readonly' buffer too)
      vim.cmd('noautocmd setlocal buftype=' .. buftype)
    end
  end)
  pcall(vim.api.nvim_del_autocmd, id)
  if not ran then
    return nil -- (refused: E142, the command-line window, a sandbox)
  end
  return disk.signature(name) == sig -- (Neovim took the stat as ours returned)
end

--- Whether `events` ('eventignore', 'eventignorewin') leaves BufWriteCmd out.
---@param events string
---@return boolean
function ignored(events)
  for event in events:lower():gmatch('[^,]+') do
    if event == 'all' or event == 'bufwritecmd' then
      return true
    end
  end
  return false
end

--- Whether a BufWriteCmd other than ours may run for `buf` (and write, or do what it does): one
--- of its own, or one whose pattern may match its name (matched more loosely than Neovim does:
--- full name, relative name and tail, any case).
---@param buf integer
---@param name string
---@return boolean
function foreign(buf, name)
  local ok, cmds = pcall(vim.api.nvim_get_autocmds, { event = 'BufWriteCmd' })
  if not ok then
    return true
  end
  local names = { name, vim.fn.fnamemodify(name, ':~:.'), vim.fs.basename(name) }
  for _, au in ipairs(cmds) do
    if au.buflocal then
      if au.buffer == buf then
        return true
      end
    else
      local compiled, re = pcall(vim.regex, '\\c' .. vim.fn.glob2regpat(au.pattern))
      if not compiled then
        return true
      end
      for _, each in ipairs(names) do
        if re:match_str(each) then
          return true
        end
      end
    end
  end
  return false
end

return M
