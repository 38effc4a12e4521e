-- What :GeminiSend and :GeminiAdd type: text as text, names as themselves. Pure Lua, no agent.
local prompt = require('gemini_companion.agents.prompt')

local function equal(got, want)
  assert(got == want, ('%s ~= %s'):format(vim.inspect(got), vim.inspect(want)))
end

return {
  controls_become_pictures_and_lf_tab_stay = function()
    equal(prompt.text('a\r\nb\rc\27[201~\0\3\4\21\127\td\n'), 'a\nb␍c␛[201~␀␃␄␕␡\td\n')
    equal(prompt.text('a\nb\tc', true), 'a␊b␉c')
  end,
  c1_and_bytes_that_are_not_utf8_become_replacement_characters = function()
    -- C1 as UTF-8 (CSI, NEL), raw 8-bit CSI, a lone continuation, a surrogate, an overlong form,
    -- beyond U+10FFFF, a truncated sequence; kept: NBSP, é, an emoji, the largest code point.
    local raw = '\194\155\194\133\155\128\237\160\128\224\128\128\244\144\128\128\226\130'
    equal(prompt.text(raw), ('\239\191\189'):rep(16))
    local kept = '\194\160é😀\244\143\191\191'
    equal(prompt.text(kept), kept)
  end,
  every_byte_maps_to_text_and_mapping_twice_changes_nothing = function()
    local all = {}
    for byte = 0, 255 do
      table.insert(all, string.char(byte))
    end
    local once = prompt.text(table.concat(all))
    assert(not once:find('[%z\1-\8\11-\31\127]'), 'a control byte is left')
    equal(vim.fn.strchars(once), 256) -- one character for each byte
    equal(prompt.text(once), once)
  end,
  names_are_used_literally = function()
    local cwd = vim.fn.getcwd()
    for _, name in ipairs({ '~x', '~/x', '$HOME.md', '%', '#', '`cmd`', '*.txt', '$(cmd)' }) do
      equal(prompt.display(name), name)
      equal(prompt.absolute(name), cwd .. '/' .. name)
    end
    equal(prompt.display(cwd), '.')
    equal(prompt.display('/elsewhere/x'), '/elsewhere/x')
  end,
  references_are_escaped_paths = function()
    equal(prompt.reference('a b (1).txt'), [[@./a\ b\ \(1\).txt]])
    equal(prompt.reference([[it's "$q".txt]]), [[@./it\'s\ \"\$q\".txt]])
    equal(prompt.reference('session:x'), '@./session:x') -- a file, not a Qwen session
    equal(prompt.reference('e\27[201~\r.txt'), [[@./e␛\[201\~␍.txt]])
  end,
  glob_patterns_are_recognised = function()
    for _, path in ipairs({ '*.txt', 'a?', '[id].tsx', '{a,b}', '+(x)', '@(x)', '!(x)' }) do
      assert(prompt.globbed(path, 'gemini') and prompt.globbed(path) and not prompt.globbed(path, 'qwen'), path)
    end
    assert(prompt.globbed('a\\b', 'gemini') and prompt.globbed('a\\b', 'qwen'))
    for _, path in ipairs({ 'a b (1).txt', 'x]}.txt', 'bang!.txt', 'mail@x', '$HOME.md', '~x' }) do
      assert(not prompt.globbed(path, 'gemini'), path)
    end
  end,
  the_fence_is_longer_than_any_backtick_run_in_the_code = function()
    local run = ('`'):rep(100000) -- found in one pass: a quadratic search took seconds here
    local text = prompt.snippet('/abs/a.md', 1, 2, { 'x ``` y', run }, 'markdown')
    local fence = ('`'):rep(100001)
    local want = ('From /abs/a.md (lines 1-2):\n%smarkdown\nx ``` y\n%s\n%s\n'):format(fence, run, fence)
    assert(text == want, 'not fenced by 100001 backticks') -- (no 100 KB message)
    equal(prompt.snippet('/abs/a.md', 1, 1, { 'plain' }, ''), 'From /abs/a.md (line 1):\n```\nplain\n```\n')
  end,
  a_snippet_escapes_every_at_but_not_the_prompt = function()
    local text = prompt.snippet('/abs/a@b.py', 2, 3, { '@x', '```' }, 'python', 'see @y')
    equal(text, 'From /abs/a\\@b.py (lines 2-3):\n````python\n\\@x\n```\n````\nsee @y')
  end,
}
