-- luacheck for the Lua side (make lint); StyLua owns the layout.
std = 'luajit'
globals = { 'vim' } -- its fields (vim.bo, vim.g, vim.env, ...) are set on purpose
max_line_length = false
codes = true
