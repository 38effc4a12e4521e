--- A review's disk side: file versions, watching the target while it is under review, and
--- reloading the user's buffers after the CLI wrote an accepted file.
local message = require('gemini_companion.message')
local view = require('gemini_companion.review.view')

local M = {}

--- What identifies a file's version, from its stat (nil: it does not exist); the Python
--- side computes the same string.
---@param st uv.fs_stat.result?
---@return string
function M.stat_signature(st)
  return st and ('%d:%d:%d:%d'):format(st.ino, st.size, st.mtime.sec, st.mtime.nsec) or 'missing'
end

---@param path string
---@return string
function M.signature(path)
  return M.stat_signature(vim.uv.fs_stat(path))
end

--- Reload the user's unmodified buffers of `path` from disk; unsaved edits are never discarded.
---@param path string
function M.reload_buffers(path)
  local now = vim.uv.fs_stat(path)
  for _, buf in ipairs(view.file_buffers(path)) do
    if now and now.type ~= 'file' then -- a FIFO would hold Neovim in the read
      message.notify(('%s is a %s now: buffer %d not reloaded'):format(view.display(path), now.type, buf), 'warn')
    elseif vim.bo[buf].modified then
      local text =
        '%s was changed by the agent, but buffer %d has unsaved edits: not reloaded (:e! loads the new version)'
      message.notify(text:format(view.display(path), buf), 'warn')
    else
      -- Answer the reload question ourselves: no prompt, even with 'noautoread'.
      local id = vim.api.nvim_create_autocmd('FileChangedShell', {
        buffer = buf,
        callback = function()
          vim.v.fcs_choice = 'reload'
        end,
      })
      pcall(vim.cmd.checktime, buf)
      pcall(vim.api.nvim_del_autocmd, id)
    end
  end
end

--- Once the CLI has written an accepted file, reload the user's buffers of it: a stale
--- buffer must not overwrite the agent's change later.
---@param path string
function M.reload_after_write(path)
  if #view.file_buffers(path) == 0 then
    return
  end
  local before = M.signature(path)
  local timer = assert(vim.uv.new_timer())
  local waited = 0
  timer:start(100, 100, function()
    waited = waited + 100
    if M.signature(path) == before and waited < 30000 then
      return
    end
    timer:stop()
    timer:close()
    vim.schedule(function()
      M.reload_buffers(path)
    end)
  end)
end

--- Stat the file every second and call `on_change(review)` (on the main loop) when its version
--- changed. Not uv's fs_poll: its first stat is taken asynchronously, so a change right after
--- opening could become its baseline.
---@param review gemini_companion.Review
---@param on_change fun(review: gemini_companion.Review)
function M.watch(review, on_change)
  local last ---@type string?
  review.poll = vim.uv.new_timer()
  if not review.poll then
    return
  end
  review.poll:start(1000, 1000, function()
    vim.uv.fs_stat(review.path, function(_, st)
      local now = M.stat_signature(st)
      if now == last then
        return
      end
      last = now
      vim.schedule(function()
        if review.done then
          return
        end
        on_change(review)
      end)
    end)
  end)
end

return M
