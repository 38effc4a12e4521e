--- `:GeminiSend` and `:GeminiAdd`: what a command's words, its range and the buffer make into the
--- text an agent is sent (the agent named first, else the last one used; agents/init.lua's
--- `send` types it).
local agents = require('gemini_companion.agents')
local message = require('gemini_companion.message')

local M = {}
local H = {}

--- `:[range]GeminiSend[!] [agent] [prompt]`: the range's snippet, then the prompt; a prompt with
--- placeholders (agents/placeholders.lua) is sent alone, filled in.
---@param opts table
function M.send(opts)
  local prompt = require('gemini_companion.agents.prompt')
  local name, words = H.agent_and_rest(opts.fargs)
  local placeholders = require('gemini_companion.agents.placeholders')
  if placeholders.any(table.concat(words, ' ')) then -- the prompt says what goes with it
    local text, why = placeholders.expand(table.concat(words, ' '), placeholders.context(opts))
    if not text then
      return message.notify('GeminiSend: ' .. why, 'error')
    end
    return agents.send(name, text, opts.bang)
  end
  local path = vim.api.nvim_buf_get_name(0)
  if path == '' then
    return message.notify('GeminiSend: this buffer has no file', 'error')
  end
  local lines, first, last = prompt.selection(opts)
  local text = prompt.snippet(path, first, last, lines, vim.bo.filetype, table.concat(words, ' '))
  agents.send(name, text, opts.bang)
end

--- `:GeminiAdd [agent] [path...]`: @references, or the current file / the file tree's node. Each
--- path is taken literally: no `~`, `$VAR`, glob or `` `cmd` `` in a name (or an argument) is expanded.
--- Only what exists is referred to (Gemini CLI reads a missing path as a search, `**/*path*`), each in
--- a form its CLI reads as exactly that file (`at_path.form`: a name Gemini CLI would glob goes as
--- the plain path, for the model's file tool). The paths are looked at off the main loop
--- (`at_path.look`); the text keeps its place among the sends asked meanwhile.
---@param opts table
function M.add(opts)
  local prompt = require('gemini_companion.agents.prompt')
  local at_path = require('gemini_companion.agents.at_path')
  local name, paths = H.agent_and_rest(opts.fargs)
  if #paths == 0 then
    -- A file tree's nodes: under the cursor, a range's, or its marks (context/trees.lua).
    local picked, marked = require('gemini_companion.context.trees').picked(opts)
    paths = picked or { prompt.current_path() }
    if #paths == 0 then
      return message.notify('GeminiAdd: no file here (give a path)', 'error')
    end
    if marked then
      message.brief(('GeminiAdd: %d marked %s'):format(#paths, #paths == 1 and 'node' or 'nodes'), 'info')
    end
  end
  local instances = require('gemini_companion.agents.instances')
  local agent, agent_spec = agents.get(agents.resolve(name)), instances.spec(agents.resolve(name))
  local cli = agent and agent.cli or (agent_spec and require('gemini_companion.agents.cli_package').of(agent_spec.cmd))
  local send, looked, left = agents.send_later(), {}, #paths
  local listings = {} -- each folder read once for all the paths (a tree's 1,000 nodes in one folder)
  for i, path in ipairs(paths) do
    at_path.look(path, cli, listings, function(seen, why)
      looked[i], left = { seen = seen, why = why }, left - 1
      if left == 0 then
        local ok, err = pcall(H.add_looked, paths, looked, cli, name, send)
        if not ok then
          send(nil) -- the sends after it go on
          error(err)
        end
      end
    end)
  end
end

--- Say what was refused, and send the references (in the order given).
---@param paths string[]
---@param looked {seen: gemini_companion.AtPathSeen?, why: string?}[]
---@param cli? 'gemini'|'qwen'
---@param name? string
---@param send fun(name: string?, text: string?)
function H.add_looked(paths, looked, cli, name, send)
  local refs, reasons, refused = {}, {}, {} -- refused[reason]: names
  for i, path in ipairs(paths) do
    local form, why = nil, looked[i].why
    if looked[i].seen then
      form, why = require('gemini_companion.agents.at_path').form(path, cli, looked[i].seen)
    end
    if form then
      table.insert(refs, form)
    else
      why = why or '?'
      if not refused[why] then
        refused[why] = {}
        table.insert(reasons, why)
      end
      table.insert(refused[why], require('gemini_companion.agents.prompt').text(path, true))
    end
  end
  if #reasons > 0 then
    local names = {}
    for _, why in ipairs(reasons) do
      vim.list_extend(names, refused[why])
    end
    -- Brief: a hit-enter prompt would hold up the agent this may start. The reasons first, whole.
    message.brief(('GeminiAdd: %s: '):format(table.concat(reasons, '; ')), 'warn', names)
  end
  send(name, #refs > 0 and table.concat(refs, ' ') .. ' ' or nil)
end

--- Split a command's words into an agent name (first word, optional: a configured one or a
--- session of one, `gemini@2`) and the rest.
---@param words string[]
---@return string?, string[]
function H.agent_and_rest(words)
  if words[1] and require('gemini_companion.agents.instances').entry(words[1]) then
    return words[1], vim.list_slice(words, 2)
  end
  return nil, words
end

return M
