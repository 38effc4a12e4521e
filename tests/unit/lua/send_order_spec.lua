-- Sends go out in the order asked (agents/send_order.lua): one whose text is still being made
-- holds back the later ones, and one that fails holds back none.
local send_order = require('gemini_companion.agents.send_order')

return {
  a_reserved_place_holds_back_what_comes_after_it = function()
    local done = {}
    send_order.run(function()
      table.insert(done, 'first')
    end)
    local fill = send_order.reserve()
    send_order.run(function()
      table.insert(done, 'third')
    end)
    assert(vim.deep_equal(done, { 'first' }), vim.inspect(done))
    fill(function()
      table.insert(done, 'second')
    end)
    fill(function()
      table.insert(done, 'again') -- filled once only
    end)
    assert(vim.deep_equal(done, { 'first', 'second', 'third' }), vim.inspect(done))
  end,
  a_place_filled_with_nothing_or_a_failing_send_holds_back_none = function()
    local done = {}
    local fill, failing = send_order.reserve(), send_order.reserve()
    send_order.run(function()
      table.insert(done, 'after')
    end)
    fill(nil)
    assert(#done == 0)
    local ok, err = pcall(failing, function()
      error('broken', 0)
    end)
    assert(not ok and err == 'broken', err)
    assert(vim.deep_equal(done, { 'after' }), vim.inspect(done))
    send_order.run(function()
      table.insert(done, 'later')
    end)
    assert(vim.deep_equal(done, { 'after', 'later' }), vim.inspect(done))
  end,
}
