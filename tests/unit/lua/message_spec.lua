-- The one line the plugin says: a long path is shortened in the middle, never the reason before it.
local message = require('gemini_companion.message')

local function equal(got, want)
  assert(got == want, ('%s ~= %s'):format(vim.inspect(got), vim.inspect(want)))
end

return {
  a_long_name_keeps_its_start_and_end_in_the_given_cells = function()
    equal(message.middle('short.txt', 20), 'short.txt')
    equal(message.middle('abcdefghijklmnopqrstuvwxyz', 9), 'abcd…wxyz')
    equal(message.middle('abcdefghijklmnopqrstuvwxyz', 10), 'abcde…wxyz')
    -- Wide characters count two cells: never more than asked for.
    local wide = message.middle(('日本'):rep(20), 10)
    assert(vim.fn.strdisplaywidth(wide) <= 10, wide)
    equal(vim.fn.strcharpart(wide, 0, 2), '日本')
  end,
}
