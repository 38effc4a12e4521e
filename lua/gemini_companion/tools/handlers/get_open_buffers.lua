--- get_open_buffers: the workspace's loaded, listed buffers: unsaved, visible, current, cursor.
local paths = require('gemini_companion.tools.paths')

return function(args, done)
  local current = vim.api.nvim_get_current_buf()
  if vim.bo[current].buftype ~= '' then -- in the agent's terminal: the window the user came from
    local previous = vim.fn.win_getid(vim.fn.winnr('#'))
    current = previous ~= 0 and vim.api.nvim_win_get_buf(previous) or current
  end
  local items = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buflisted and paths.buffer_path(buf, args.buffers)
    local rel = path and paths.relative(path, args.roots)
    if rel then
      local wins = vim.fn.win_findbuf(buf)
      local cursor = #wins > 0 and vim.api.nvim_win_get_cursor(wins[1]) or vim.api.nvim_buf_get_mark(buf, '"')
      table.insert(items, {
        path = rel,
        modified = vim.bo[buf].modified,
        visible = #wins > 0,
        current = buf == current,
        cursor = { line = math.max(cursor[1], 1), column = cursor[2] + 1 },
        filetype = vim.bo[buf].filetype,
        line_count = vim.api.nvim_buf_line_count(buf),
      })
    end
  end
  done({ buffers = items })
end
