--- The reads of follow/init.lua: followed files read off the main loop a few at a time (their
--- completions run on the main loop, and 200 at once held it 20 ms), each result handed on in a
--- slice of the loop (follow/slices.lua).
local files = require('gemini_companion.files')
local slices = require('gemini_companion.follow.slices')
local signature = require('gemini_companion.review.disk').stat_signature

local M = {}

-- Files read at once.
local MAX_READS = 4
-- Bytes followed at most, whatever `changes.max_file_kb` allows: a read's bytes become one Lua
-- string on the main loop as it ends, about 1 ms per MB (20 MB: 17-24 ms of CPU). A larger file
-- is named as not reloaded.
local MAX_FOLLOWED = 8 * 1024 * 1024

---@class gemini_companion.follow.Result one file's read
---@field buf integer
---@field entry gemini_companion.Followed
---@field text string?
---@field why string?
---@field sig string

local to_read, in_flight = {}, 0 ---@type integer[], integer
local followed ---@type table<integer, gemini_companion.Followed>
local applied ---@type fun(result: gemini_companion.follow.Result)
local pump -- below the public functions

--- Set the followed buffers (a queued one no longer in it is not read) and what gets each result.
---@param entries table<integer, gemini_companion.Followed>
---@param each fun(result: gemini_companion.follow.Result)
function M.setup(entries, each)
  followed, applied = entries, each
end

--- Read `buf`'s file once its turn comes.
---@param buf integer
function M.queue(buf)
  table.insert(to_read, buf)
  pump()
end

--- Start the next reads, a few at a time.
function pump()
  local limit = math.min(require('gemini_companion.config').options.changes.max_file_kb * 1024, MAX_FOLLOWED)
  while in_flight < MAX_READS and #to_read > 0 do
    local buf = table.remove(to_read, 1)
    local entry = followed[buf]
    if entry then
      in_flight = in_flight + 1
      files.read_async(entry.name, limit, function(text, why, stat)
        in_flight = in_flight - 1
        local result = { buf = buf, entry = entry, text = text, why = why, sig = signature(stat) }
        slices.soon(function() -- each result in a slice of the loop, with the rest
          applied(result)
        end)
        pump()
      end)
    end
  end
end

return M
