--- One line per kind for a burst of followed files (a `git checkout` changes many at once): what
--- happened to them (a conflict kept, a deletion, a file not reloaded), said once the burst is over.
local message = require('gemini_companion.message')

local M = {}

local LINES = {
  conflict = '%s changed on disk; your unsaved edits kept (:GeminiCompanion conflict)',
  deleted = '%s deleted on disk; its buffer kept',
  unread = '%s: %s changed on disk, not reloaded',
}
local heard = {} ---@type table<string, {names: string[], why: string?}>
local speaker ---@type uv.uv_timer_t?

--- Say what happened to `name`: with the rest of its burst, in one line per kind, once the burst
--- is over; the reason first when there is one.
---@param kind 'conflict'|'deleted'|'unread'
---@param name string
---@param why? string
function M.say(kind, name, why)
  heard[kind] = heard[kind] or { names = {}, why = why }
  table.insert(heard[kind].names, vim.fn.fnamemodify(name, ':~:.'))
  speaker = speaker or vim.uv.new_timer()
  if speaker and not speaker:is_active() then
    speaker:start(
      100,
      0,
      vim.schedule_wrap(function()
        for what, burst in pairs(heard) do
          local names = burst.names
          local who = #names == 1 and names[1] or ('%d files (%s, …)'):format(#names, names[1])
          local line = what == 'unread' and LINES[what]:format(burst.why, who) or LINES[what]:format(who)
          message.brief(vim.fn.strtrans(line), 'warn')
        end
        heard = {}
      end)
    )
  end
end

return M
