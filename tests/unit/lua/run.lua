-- Runs every tests/unit/lua/*_spec.lua: each returns a table of name -> function (an error fails it).
local root = arg[1]
vim.opt.runtimepath:prepend(root)
local failed, passed = 0, 0
for _, file in ipairs(vim.fn.glob(root .. '/tests/unit/lua/*_spec.lua', false, true)) do
  for name, test in pairs(dofile(file)) do
    local ok, err = pcall(test)
    if ok then
      passed = passed + 1
    else
      failed = failed + 1
      io.stderr:write(('FAIL %s: %s: %s\n'):format(vim.fn.fnamemodify(file, ':t'), name, err))
    end
  end
end
io.stdout:write(('%d passed, %d failed\n'):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
