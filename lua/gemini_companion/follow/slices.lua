--- Main-loop work queued and run a slice of the loop at a time: the results of many files (a
--- `git checkout` of 200) never all run in one go, each scheduled on its own (they held the
--- loop 27 ms at once).
local M = {}

-- Main-loop time one slice may take before it yields to keys and redraws.
local SLICE_NS = 1e6

local queue = {} ---@type fun()[]
local running = false
local run -- below the public function

--- Run `work` on the main loop soon, after what is queued already (callable from a fast event).
---@param work fun()
function M.soon(work)
  queue[#queue + 1] = work
  if not running then
    running = true
    vim.schedule(run)
  end
end

--- Run the queued work until a slice is spent; the rest in the next one.
function run()
  local started = vim.uv.hrtime()
  while #queue > 0 and vim.uv.hrtime() - started < SLICE_NS do
    local ok, err = pcall(table.remove(queue, 1))
    if not ok then
      vim.schedule(function()
        error(err, 0) -- (shown as any error; the queue goes on)
      end)
    end
  end
  if #queue > 0 then
    vim.defer_fn(run, 0) -- keys and redraws first
  else
    running = false
  end
end

return M
