--- Paths for the tools: workspace-relative names, and buffers' and answers' names resolved off
--- the main loop (libuv's thread pool: a name on a hung mount stalls no key).
local M = {}

local RESOLVE_TIMEOUT_MS = 2000

---@param path string
---@param roots string[]
---@return string? relative path, when inside a root
function M.relative(path, roots)
  for _, root in ipairs(roots) do
    if path == root then
      return '.'
    end
    if vim.startswith(path, root .. '/') then
      return path:sub(#root + 2)
    end
  end
end

---@alias gemini_companion.tools.Buffers table<integer, string|false> buffer -> resolved path

--- fs_realpath calls not back yet: path -> when asked (ms, vim.uv.now) and who waits for it. A
--- name on a hung mount holds one of libuv's few pool threads until the mount is gone: it is
--- asked once, not again by every later call (which would take every thread).
---@type table<string, { since: integer, waiting: fun(real: string)[] }>
local asking = {}

--- `paths` (key -> path) resolved off the main loop (libuv's thread pool: a file on a hung mount
--- stalls no key), then done(key -> real path; a file that is gone keeps its name; false: not
--- resolved within RESOLVE_TIMEOUT_MS, or still not back from an earlier call after that time).
---@generic K
---@param paths table<K, string>
---@param done fun(real: table<K, string|false>)
function M.realpaths(paths, done)
  local real, pending, finished = {}, 0, false
  local function finish()
    if not finished then
      finished = true
      done(real)
    end
  end
  for key, path in pairs(paths) do
    real[key] = false
    local ask = asking[path]
    if not ask or vim.uv.now() - ask.since < RESOLVE_TIMEOUT_MS then -- else stuck: not resolved
      pending = pending + 1
      if not ask then
        ask = { since = vim.uv.now(), waiting = {} }
        asking[path] = ask
        vim.uv.fs_realpath(path, function(err, resolved)
          vim.schedule(function()
            asking[path] = nil
            for _, wait in ipairs(ask.waiting) do
              wait(not err and resolved or path)
            end
          end)
        end)
      end
      table.insert(ask.waiting, function(resolved)
        if not finished then
          real[key] = resolved
          pending = pending - 1
          if pending == 0 then
            finish()
          end
        end
      end)
    end
  end
  if pending == 0 then
    return finish()
  end
  vim.defer_fn(finish, RESOLVE_TIMEOUT_MS)
end

--- The resolved file paths of the buffers named inside the workspace, then done(buffers). A
--- buffer named elsewhere (the user's ~/.ssh/config, say) is never the tools' business, wherever
--- a link makes its name point; one not resolved in time is left out too.
---@param roots string[]
---@param done fun(buffers: gemini_companion.tools.Buffers)
function M.resolve_buffers(roots, done)
  local inside = {} ---@type table<integer, string>
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.bo[buf].buftype == '' and vim.api.nvim_buf_get_name(buf) or ''
    if name ~= '' and M.relative(name, roots) then
      inside[buf] = name
    end
  end
  M.realpaths(inside, function(real)
    local buffers = {} ---@type gemini_companion.tools.Buffers
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      buffers[buf] = real[buf] or false
    end
    done(buffers)
  end)
end

--- Resolved file path of a buffer named inside the workspace (`resolve_buffers`).
---@param buf integer
---@param buffers gemini_companion.tools.Buffers
---@return string?
function M.buffer_path(buf, buffers)
  return buffers[buf] or nil
end

--- The loaded file buffer of a resolved path.
---@param path string
---@param buffers gemini_companion.tools.Buffers
---@return integer?
function M.loaded_buffer(path, buffers)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and M.buffer_path(buf, buffers) == path then
      return buf
    end
  end
end

return M
