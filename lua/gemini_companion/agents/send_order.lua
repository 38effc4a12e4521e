--- Sends go out in the order they were asked for: a send whose text is still being made off the
--- main loop (`:GeminiAdd` reading a path's folders: at_path.look) holds back the sends asked
--- after it until its text is ready (or it is dropped).
local M = {}

---@type {run: fun()?, ready: boolean}[]
local queue = {}

--- Run what is ready at the head. A send that fails holds back none after it (its error is
--- raised once they ran).
local function flush()
  local failed
  while queue[1] and queue[1].ready do
    local run = table.remove(queue, 1).run
    local ok, err = pcall(run or function() end)
    failed = failed or (not ok and err or nil)
  end
  if failed then
    error(failed, 0)
  end
end

--- Run `fn` now when nothing asked earlier waits, else after those.
---@param fn fun()
function M.run(fn)
  table.insert(queue, { run = fn, ready = true })
  flush()
end

--- A place in the order for a send whose text comes later: call the returned function once, with
--- what to run (nil: nothing is sent).
---@return fun(fn: fun()?)
function M.reserve()
  local slot = { ready = false }
  table.insert(queue, slot)
  return function(fn)
    if not slot.ready then
      slot.run, slot.ready = fn, true
      flush()
    end
  end
end

return M
