--- Hunk arithmetic for a checked revert: the turn's hunks (its end -> its start), each placed in
--- the text as it is now, or marked changed since (not revertable) or already back; and a hunk
--- taken back. Pure functions of strings and lines: no buffer, no file.
local M = {}

---@class gemini_companion.Hunk
---@field after_start integer first line in the turn's end version (count 0: insert after it)
---@field after_count integer
---@field before_start integer
---@field before_count integer
---@field now_start integer? where it lies now (nil: changed after the turn: not revertable)
---@field already boolean? taken back already (the lines now are the turn's start)

--- The turn's hunks (end version -> start version), each placed in the text as it is now.
---@param before string
---@param after string
---@param now string
---@return gemini_companion.Hunk[]
function M.hunks(before, after, now)
  local norm = function(t) -- whole lines, as split() counts them ('' has none)
    return (t == '' or t:sub(-1) == '\n') and t or t .. '\n'
  end
  local turn = vim.diff(norm(after), norm(before), { result_type = 'indices' }) --[[@as integer[][] ]]
  local since = vim.diff(norm(after), norm(now), { result_type = 'indices' }) --[[@as integer[][] ]]
  local before_lines, now_lines = M.split(before), M.split(now)
  local out = {}
  for _, h in ipairs(turn) do
    local first, last = h[1], h[1] + math.max(h[2], 1) - 1
    local shift, clash, already = 0, false, false
    for _, s in ipairs(since) do
      local s_first, s_last = s[1], s[1] + math.max(s[2], 1) - 1
      if s_last < first or (s[2] == 0 and s[1] < first) then
        shift = shift + s[4] - s[2]
      elseif s_first <= last or (h[2] == 0 and s[1] == h[1]) then
        clash = true -- the user (or a later turn) changed these lines
        already = s[1] == h[1]
          and s[2] == h[2]
          and vim.deep_equal(
            vim.list_slice(now_lines, s[3], s[3] + s[4] - 1),
            vim.list_slice(before_lines, h[3], h[3] + h[4] - 1)
          )
      end
    end
    table.insert(out, {
      after_start = h[1],
      after_count = h[2],
      before_start = h[3],
      before_count = h[4],
      now_start = not clash and h[1] + shift or nil,
      already = already,
    })
  end
  return out
end

--- `now` with hunk `h` taken back to the turn's start.
---@param h gemini_companion.Hunk
---@param before_lines string[]
---@param now_lines string[]
---@return string[]
function M.apply(h, before_lines, now_lines)
  local first0 = h.after_count == 0 and h.now_start or h.now_start - 1
  local out = vim.list_slice(now_lines, 1, first0)
  vim.list_extend(out, vim.list_slice(before_lines, h.before_start, h.before_start + h.before_count - 1))
  return vim.list_extend(out, vim.list_slice(now_lines, first0 + h.after_count + 1))
end

--- A text as lines, and whether it ends with a newline ('' and nil have no line).
---@param text string?
---@return string[] lines, boolean eol
function M.split(text)
  if not text or text == '' then
    return {}, false
  end
  local eol = text:sub(-1) == '\n'
  return vim.split(eol and text:sub(1, -2) or text, '\n', { plain = true }), eol
end

return M
