--- The delivery of sends to agents (`M.send`, `M.send_later`, `M.ask`, re-exported by agents/init.lua):
--- the text typed as a bracketed paste once the agent takes input, then Enter when asked, in the
--- order the sends were asked (send_order.lua), one at a time per agent (send_queue.lua).
local host = require('gemini_companion.host')
local message = require('gemini_companion.message')

local M = {}
local H = {}

local SUBMIT_DELAY_MS = 300
local READY_STILL_TICKS = 5 -- 500 ms without a change on screen
local READY_MAX_MS = 30000

---@return table agents agents/init.lua (required when used: it requires this file)
local function agents()
  return require('gemini_companion.agents')
end

--- Type `text` into the agent's prompt as a bracketed paste (never submits on its own); `submit`:
--- then press Enter as a separate key, late enough that the CLI takes it as submit. The text
--- arrives as text (`prompt.text`): no byte of it is a key, an escape sequence or the paste's end.
--- The cursor, window and mode stay where they are: a hidden agent stays hidden, one that does
--- not run starts shown but not focused; `focus_after_send`: the agent is shown and focused.
---@param name? string
---@param text string
---@param submit? boolean
function M.send(name, text, submit)
  require('gemini_companion.agents.send_order').run(function()
    H.deliver(name, text, submit)
  end)
end

--- A send whose text is made later (off the main loop): its place in the order of sends is taken
--- now. Call the returned function once, with the text (nil: nothing is sent).
---@return fun(name: string?, text: string?, submit: boolean?)
function M.send_later()
  local fill = require('gemini_companion.agents.send_order').reserve()
  return function(name, text, submit)
    fill(text and function()
      H.deliver(name, text, submit)
    end or nil)
  end
end

--- Send `prompt` with its placeholders (`{file}`, `{position}`, `{selection}`, `{diagnostics}`,
--- `{quickfix}`: agents/placeholders.lua) filled from the current window and, in Visual mode, the
--- selection. A placeholder that cannot be filled sends nothing: false and the reason (also shown).
---@param prompt string
---@param opts? {agent?: string, submit?: boolean}
---@return boolean sent, string? why
function M.ask(prompt, opts)
  opts = opts or {}
  local placeholders = require('gemini_companion.agents.placeholders')
  local text, why = placeholders.expand(prompt, placeholders.context())
  if not text then
    message.notify(why, 'error')
    return false, why
  end
  M.send(opts.agent, text, opts.submit)
  return true
end

--- Run `fn` once the agent takes input: at once for one that has been running, else when its
--- screen has shown something and stayed still for a moment (bounded).
---@param agent gemini_companion.Agent
---@param fn fun()
function H.when_ready(agent, fn)
  if agent.ready or (vim.uv.hrtime() - agent.started) / 1e6 > READY_MAX_MS or agent.provider.screen(agent) == nil then
    return fn()
  end
  local timer = assert(vim.uv.new_timer())
  local last, still = nil, 0
  timer:start(100, 100, function()
    vim.schedule(function()
      if timer:is_closing() then
        return
      end
      local screen = agent.exited and '' or agent.provider.screen(agent) or ''
      still = (vim.trim(screen) ~= '' and screen == last) and still + 1 or 0
      last = screen
      local waited = (vim.uv.hrtime() - agent.started) / 1e6
      if still >= READY_STILL_TICKS or waited > READY_MAX_MS or agents().get(agent.name) ~= agent then
        timer:stop()
        timer:close()
        if agents().get(agent.name) == agent then
          agent.ready = true
          fn()
        end
      end
    end)
  end)
end

---@param name? string
---@param text string
---@param submit? boolean
function H.deliver(name, text, submit)
  text = require('gemini_companion.agents.prompt').text(text)
  name = agents().resolve(name)
  agents().reach(name, function(agent)
    agents().last = name
    require('gemini_companion.agents.send_queue').run(agent, function(done, guard)
      H.when_ready(
        agent,
        guard(function()
          local ok, err = agent.provider.paste(agent, text)
          if not ok then
            done()
            return message.notify(err or '?', 'warn')
          elseif not submit then
            return done()
          end
          -- Gemini turns an Enter within ~40 ms of a paste into a newline (agents/submit.lua: and
          -- when the machine holds it back, however late the Enter comes).
          vim.defer_fn(
            guard(function()
              if agents().get(name) == agent then
                -- A turn boundary for :GeminiChanges, unless the agent's own hooks tell its turns.
                host.notify('changes_mark', { agent = name, cwd = vim.fn.getcwd(), reason = 'send' })
                require('gemini_companion.agents.submit').enter(agent, function()
                  return agents().get(name) == agent
                end)
              end
              done()
            end),
            SUBMIT_DELAY_MS
          )
        end)
      )
    end)
  end)
end

return M
