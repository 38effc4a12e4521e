-- Minimal config for the tests' child Neovims: this checkout, its venv as Python host.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
vim.opt.runtimepath:prepend(root)
vim.opt.shadafile = 'NONE'
vim.opt.swapfile = false
vim.g.gemini_companion_python = vim.env.GEMINI_COMPANION_PYTHON or (root .. '/.venv/bin/python')
if vim.env.GEMINI_COMPANION_SETUP then
  require('gemini_companion').setup(vim.json.decode(vim.env.GEMINI_COMPANION_SETUP))
end
