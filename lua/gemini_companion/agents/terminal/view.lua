--- What an agent's window (native provider) is like when you come back to it: Terminal mode when
--- `terminal.auto_insert` (Neovim then shows the bottom, where the CLI's prompt is), else Normal
--- mode with the view you left, also in a window that hiding closed and showing opened anew (a
--- new window would put the cursor back, not the lines you were reading). A view that showed the
--- last line comes back at the last line, so it goes on following the output.
local config = require('gemini_companion.config')

local M = {}

local group = vim.api.nvim_create_augroup('gemini_companion_agent_view', { clear = true })

---@class gemini_companion.AgentView: vim.fn.winsaveview.ret
---@field bottom boolean The last line was in view.

--- Keep the view of the agent's window `win` (it is leaving, or about to close).
---@param agent gemini_companion.Agent
---@param win integer
function M.save(agent, win)
  if not vim.api.nvim_win_is_valid(win) or vim.api.nvim_win_get_buf(win) ~= agent.buf then
    return
  end
  agent.view = vim.api.nvim_win_call(win, function()
    local view = vim.fn.winsaveview() --[[@as gemini_companion.AgentView]]
    view.bottom = vim.fn.line('w$') >= vim.api.nvim_buf_line_count(0)
    return view
  end)
end

--- Put the view kept back in `win`, a new window of the agent's.
---@param agent gemini_companion.Agent
---@param win integer
function M.restore(agent, win)
  local view = agent.view --[[@as gemini_companion.AgentView?]]
  if not view or config.options.terminal.auto_insert then
    return
  end
  vim.api.nvim_win_call(win, function()
    if view.bottom then
      vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })
    else
      vim.fn.winrestview(view)
    end
  end)
end

--- Watch the agent's buffer: its view when a window leaves it, Terminal mode on entering it.
---@param agent gemini_companion.Agent
function M.watch(agent)
  vim.api.nvim_create_autocmd('WinLeave', {
    group = group,
    buffer = agent.buf,
    callback = function()
      M.save(agent, vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'WinEnter' }, {
    group = group,
    buffer = agent.buf,
    callback = function()
      if config.options.terminal.auto_insert then
        vim.cmd.startinsert()
      end
    end,
  })
end

return M
