--- A paste of the user's into an agent's terminal reaches the CLI as one paste. Neovim before
--- 0.12.2 hands a long paste (which the UI streams in chunks) to a terminal chunk by chunk, each
--- its own bracketed paste: 5,000 lines reach the CLI as dozens of pastes. Here the chunks of a
--- paste into an agent's terminal are gathered and handed to Neovim's paste whole, as one paste
--- (Neovim still brackets it, or not, as the CLI asked).
local M = {}

local installed = false
local gathering ---@type string[]? the lines of the paste under way into an agent's terminal

--- Gather streamed pastes into the terminals `is_agent` names, on the versions that split them.
--- Once; the `vim.paste` in place then (the user's own, if any) does the pasting.
---@param is_agent fun(buf: integer): boolean
function M.install(is_agent)
  if installed or vim.fn.has('nvim-0.12.2') == 1 then
    return
  end
  installed = true
  local paste = vim.paste
  vim.paste = function(lines, phase) ---@diagnostic disable-line: duplicate-set-field
    if phase == 1 then
      local buf = vim.api.nvim_get_current_buf()
      gathering = (vim.bo[buf].buftype == 'terminal' and is_agent(buf)) and {} or nil
    end
    if phase == -1 or not gathering then
      return paste(lines, phase)
    end
    local whole = gathering
    -- A chunk's first line goes on with the last line of the chunk before it.
    whole[math.max(#whole, 1)] = (whole[#whole] or '') .. lines[1]
    vim.list_extend(whole, lines, 2)
    if phase == 3 then
      gathering = nil
      return paste(whole, -1)
    end
    return true
  end
end

return M
