--- What a CLI's screen says of its agent, for an agent whose hooks are not heard: read where the
--- CLI draws each thing, never from text anywhere on the screen (the transcript, and the user's
--- draft, may hold any words). The layouts of Gemini CLI 0.61.0 and Qwen Code 0.24.4, captured
--- from the real CLIs (tests/harness/data/screens/):
---   * a dialog replaces the input box at the bottom. Gemini: a bordered box (`╭…╮ │ … │ ╰…╯`)
---     is the last thing on the screen, with its options (`● 1. Allow once`); its first line
---     names the tool (`? Shell  touch a.txt`). Qwen: no border; the tool's line (`? Shell … ←`),
---     the options (`› 1. Yes, allow once`), then its spinner line `Waiting for user confirmation`
---     last on the screen;
---   * otherwise the input box: a rule (`────`), then the prompt line (`>`), at the bottom above
---     the footer. The CLI is working when its spinner line (`… (esc to cancel, 3s)`) sits right
---     above that rule, and idle when not.
--- And `text`: what a CLI names (on its screen, in its hooks) as one bounded line of text.
local M = {}

local BOTTOM = 120 -- lines read from the end: a dialog with a diff can fill a tall screen
local FOOTER = 40 -- lines below the input box's rule: a footer, a hint, a draft of many lines
local MAX_TEXT = 120 -- characters of what a CLI names, in a message
local PLACEHOLDER = 'Type your message' -- both CLIs' empty prompt

--- The screen's last line with anything on it (0: none).
---@param lines string[]
---@return integer
local function last_drawn(lines)
  local last = #lines
  while last > 0 and vim.trim(lines[last]) == '' do
    last = last - 1
  end
  return last
end

---@param line string
---@return boolean
local function rule(line)
  local text = vim.trim(line)
  return #text >= 30 and text:gsub('─', '') == ''
end

--- Text from a CLI (its screen, its hooks) as one bounded line: data, never markup. Any bytes.
---@param text any
---@param max? integer characters (default 120)
---@return string
function M.text(text, max)
  max = max or MAX_TEXT
  text = tostring(text or ''):sub(1, 4 * max + 4) -- no more than `max` characters can come of more
  -- NUL first: Vimscript takes a string holding one as a Blob (strtrans fails on it).
  local line = vim.trim(vim.fn.strtrans((text:gsub('%z', '^@'):gsub('%s+', ' '))))
  if vim.fn.strchars(line) > max then
    line = vim.fn.strcharpart(line, 0, max - 1) .. '…'
  end
  return line
end

--- What a dialog's tool line (`? Shell  touch a.txt`, Qwen's ends in `←`) asks, in words.
---@param line string?
---@return string
local function asks(line)
  local tool, rest = (line or ''):match('^%s*%?%s+(%S+)%s+(.-)%s*$')
  if not tool then
    local question = (line or ''):match('^%s*>?%s*(.-)%s*$') -- Gemini's own questions: `> Do you want …`
    return question ~= '' and 'asks: ' .. M.text(question) or 'asks for confirmation'
  end
  rest = rest:gsub('%s*←$', '')
  if tool == 'Shell' then
    return ('asks to run: `%s`'):format(M.text(rest))
  end
  return 'asks: ' .. M.text(tool .. ' ' .. rest)
end

--- The first of a dialog's options, chosen (`●`, Qwen's `›`) or not.
---@param line string
---@return integer?
local function option(line)
  return line:find('^%s*1%. ') or line:find('^%s*●%s*1%. ') or line:find('^%s*›%s*1%. ')
end

--- Gemini's dialog: the box that ends the screen, with an option list; what it asks.
---@param lines string[]
---@param last integer
---@return string?
local function gemini_dialog(lines, last)
  local indent = lines[last]:match('^(%s*)╰─')
  if not indent then
    return nil
  end
  local top = nil
  for i = last - 1, math.max(1, last - BOTTOM), -1 do
    if lines[i]:match('^(%s*)╭') == indent then
      top = i
      break
    end
  end
  if not top then
    return nil
  end
  local first, options = nil, false
  for i = top + 1, last - 1 do
    -- Inside the border: the box's own `│` at both ends off (a box inside keeps its own).
    local inner = lines[i]:sub(#indent + 1):gsub('^│ ?', ''):gsub('%s*│%s*$', '')
    local nested = inner:find('^%s*│') or inner:find('^%s*╭') or inner:find('^%s*╰')
    if vim.trim(inner) ~= '' and not nested then
      first = first or inner
      options = options or option(inner) ~= nil
    end
  end
  return options and asks(first) or nil
end

--- Qwen's dialog: its tool line, the options, and its confirmation spinner last; what it asks.
---@param lines string[]
---@param last integer
---@return string?
local function qwen_dialog(lines, last)
  local spinner = lines[last]
  if not spinner:find('Waiting for user confirmation', 1, true) or spinner:find('esc to cancel', 1, true) then
    return nil -- with `esc to cancel`: the turn goes on (the answer is in), the input box below
  end
  local options = false
  for i = last - 1, math.max(1, last - BOTTOM), -1 do
    local line = lines[i]
    options = options or option(line) ~= nil
    if line:find('^%s*%?%s+%S') then
      return options and asks(line) or nil
    end
    if rule(line) then
      return nil
    end
  end
  return nil
end

--- The input box: its rule's line, or nil when it is not drawn at the bottom.
---@param lines string[]
---@param last integer
---@return integer?
local function input_box(lines, last)
  for i = last, math.max(1, last - FOOTER), -1 do
    if rule(lines[i]) then
      local seen = 0
      for j = i + 1, last do -- Gemini: a hint line may come first
        if vim.trim(lines[j]) ~= '' then
          if lines[j]:find('^%s?>') then
            return i
          end
          seen = seen + 1
          if seen == 2 then
            break
          end
        end
      end
    end
  end
  return nil
end

--- The input box at the bottom of a CLI's screen: its lines, from its rule to the screen's last,
--- and whether it shows the empty prompt's placeholder. nil when no input box is drawn (a dialog,
--- another program).
---@param lines string[]
---@return {text: string, empty: boolean}?
function M.input(lines)
  local last = last_drawn(lines)
  local box = last > 0 and input_box(lines, last)
  if not box then
    return nil
  end
  local empty = false
  for i = box + 1, last do
    if lines[i]:find('^%s?>') then
      empty = lines[i]:find(PLACEHOLDER, 1, true) ~= nil
      break
    end
  end
  return { text = table.concat(lines, '\n', box, last), empty = empty }
end

--- The text on the prompt line of the CLI's input box (its last line starting `>`: an answer above
--- may quote '> ' lines), without a box's right border or Qwen's cursor (a zero-width space); nil
--- when none is drawn.
---@param lines string[]
---@return string?
function M.typed(lines)
  for i = #lines, 1, -1 do
    local typed = lines[i]:match('^%s?>(.*)$')
    if typed then
      typed = vim.trim(typed):gsub('│$', ''):gsub('\226\128[\139-\141]', '')
      return vim.trim(typed)
    end
  end
  return nil
end

--- What the bottom of a CLI's screen says: 'waiting' (a dialog; and what it asks), 'working'
--- (the spinner above the input box), 'idle' (the input box alone), or nil (neither drawn).
---@param lines string[]
---@return gemini_companion.AgentState? state, string? what, boolean prompt its input box is drawn
function M.classify(lines)
  local last = last_drawn(lines)
  if last == 0 then
    return nil, nil, false
  end
  local what = gemini_dialog(lines, last) or qwen_dialog(lines, last)
  if what then
    return 'waiting', what, false
  end
  local box = input_box(lines, last)
  if not box then
    return nil, nil, false
  end
  local above = box - 1
  while above > 0 and vim.trim(lines[above]) == '' do
    above = above - 1
  end
  if above > 0 and lines[above]:find('esc to cancel', 1, true) then
    return 'working', nil, true
  end
  return 'idle', nil, true
end

return M
