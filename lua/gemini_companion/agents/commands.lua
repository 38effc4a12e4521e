--- `:GeminiSend` and `:GeminiAdd`: what a command's words, its range and the buffer make into the
--- text an agent is sent (the agent named first, else the last one used; agents/init.lua's
--- `send` types it).
local agents = require('gemini_companion.agents')
local config = require('gemini_companion.config')
local message = require('gemini_companion.message')

local M = {}
local H = {}

--- `:[range]GeminiSend[!] [agent] [prompt]`
---@param opts table
function M.send(opts)
  local prompt = require('gemini_companion.agents.prompt')
  local name, words = H.agent_and_rest(opts.fargs)
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
--- the plain path, for the model's file tool).
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
  local agent, agent_spec = agents.get(agents.resolve(name)), config.options.agents[agents.resolve(name)]
  local cli = agent and agent.cli or (agent_spec and require('gemini_companion.agents.cli_package').of(agent_spec.cmd))
  local refs, reasons, refused = {}, {}, {} -- refused[reason]: names
  for _, path in ipairs(paths) do
    local form, why = nil, 'no such file'
    if vim.uv.fs_stat(prompt.absolute(path)) then
      form, why = at_path.form(path, cli)
    end
    if form then
      table.insert(refs, form)
    else
      if not refused[why] then
        refused[why] = {}
        table.insert(reasons, why)
      end
      table.insert(refused[why], prompt.text(path, true))
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
  if #refs > 0 then
    agents.send(name, table.concat(refs, ' ') .. ' ')
  end
end

--- Split a command's words into a configured agent name (first word, optional) and the rest.
---@param words string[]
---@return string?, string[]
function H.agent_and_rest(words)
  if words[1] and config.options.agents[words[1]] then
    return words[1], vim.list_slice(words, 2)
  end
  return nil, words
end

return M
