--- Submitting what a send pasted into a CLI's prompt. Gemini CLI takes an Enter that reaches it
--- within ~40 ms of a paste for a newline, and a CLI the machine holds back (a loaded box) reads the
--- paste and the Enter together however late the Enter was sent: the prompt then gains a line
--- instead of going. The screen tells it: the prompt still holds text, and nothing moves. Enter is
--- then pressed again (the paste is long over by then), a bounded number of times. Never twice for
--- one prompt: an Enter that went clears the prompt at once (and one on an empty prompt does
--- nothing), and a screen that still changes is waited for.
local screen = require('gemini_companion.agents.attention.screen')

local M = {}
local H = {}

local CHECK_MS = 200
local MAX_CHECKS = 60 -- 12 s: a CLI held back that long shows its newline late
local STEADY_CHECKS = 5 -- the prompt unchanged for a second: the Enter became text
local MAX_PRESSES = 3

--- Press Enter for `agent`, and again while the screen shows it did not submit.
---@param agent gemini_companion.Agent
---@param current fun(): boolean the agent still runs (a stopped one is left alone)
function M.enter(agent, current)
  agent.provider.enter(agent)
  local sent = H.input(agent) -- the screen as the Enter left: a CLI held back has not drawn the paste yet
  if not sent then
    return -- no screen to read (an external terminal), or no prompt drawn: one Enter
  end
  local presses, checks, steady, last = 1, 0, 0, nil
  require('gemini_companion.poll').every(CHECK_MS, function()
    checks = checks + 1
    local now = current() and H.input(agent)
    if not now or (now.empty and now.text ~= sent.text) or checks >= MAX_CHECKS then
      return true -- it went (the prompt emptied, a dialog), or the agent is gone
    end
    steady = vim.deep_equal(now, last) and steady + 1 or 0
    last = now
    if not now.empty and steady >= STEADY_CHECKS then
      if presses >= MAX_PRESSES then
        return true
      end
      presses, steady = presses + 1, 0
      agent.provider.enter(agent)
    end
  end)
end

--- The agent's input box as its screen shows it now (nil: none drawn, or no screen to read).
---@param agent gemini_companion.Agent
---@return {text: string, empty: boolean}?
function H.input(agent)
  local ok, text = pcall(agent.provider.screen, agent)
  if not ok or type(text) ~= 'string' or text == '' then
    return nil
  end
  return screen.input(vim.split(text, '\n', { plain = true }))
end

return M
