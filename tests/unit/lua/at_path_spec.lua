-- How :GeminiAdd hands a name to each CLI (agents/at_path.lua), for the whole class of names that
-- Next.js and SvelteKit routes are made of, and names with spaces, quotes, backslashes, non-ASCII.
-- The forms were measured with the real CLIs (tests/agents/test_add_names_real_clis.py).
local at_path = require('gemini_companion.agents.at_path')

local function equal(got, want)
  assert(got == want, ('%s ~= %s'):format(vim.inspect(got), vim.inspect(want)))
end

local cwd = vim.fn.getcwd()

--- The form of an existing path, after at_path.look has read its folders (off the main loop).
local function looked_form(path, cli)
  local seen, why, done = nil, nil, false
  at_path.look(path, cli, {}, function(s, w)
    seen, why, done = s, w, true
  end)
  assert(
    vim.wait(10000, function()
      return done
    end),
    'look answers'
  )
  assert(seen, why)
  return at_path.form(path, cli, seen)
end

return {
  names_gemini_would_glob_go_as_the_plain_path_and_to_qwen_as_escaped_references = function()
    local cases = {
      { 'app/[id]/page.tsx', [[@./app/\[id\]/page.tsx]] },
      { '[...slug].tsx', [[@./\[...slug\].tsx]] },
      { '[[...opt]]/x.tsx', [[@./\[\[...opt\]\]/x.tsx]] },
      { '{a,b}.txt', [[@./\{a\,b\}.txt]] },
      { 'st*r.txt', [[@./st\*r.txt]] },
      { 'a?.txt', [[@./a\?.txt]] },
      { '+(p).txt', [[@./+\(p\).txt]] },
      { '!(r).txt', [[@./\!\(r\).txt]] },
    }
    for _, case in ipairs(cases) do
      equal(at_path.form(case[1], 'gemini'), '`' .. case[1] .. '`')
      equal(at_path.form(case[1]), '`' .. case[1] .. '`') -- a CLI the plugin does not know: as Gemini
      equal(at_path.form(case[1], 'qwen'), case[2])
    end
  end,
  a_glob_character_in_a_folder_above_counts_too = function()
    -- Gemini globs the absolute path: a project inside `[work]/` has every name read as a glob.
    equal(at_path.form('/srv/[work]/app/x.txt', 'gemini'), '`/srv/[work]/app/x.txt`')
    equal(at_path.form('/srv/[work]/app/x.txt', 'qwen'), [[@/srv/\[work\]/app/x.txt]])
  end,
  names_both_read_as_themselves_stay_references = function()
    local cases = {
      { 'src/routes/+page.svelte', '@./src/routes/+page.svelte' },
      { 'app/(group)/page.tsx', [[@./app/\(group\)/page.tsx]] },
      { 'node_modules/@scope/x.js', '@./node_modules/@scope/x.js' },
      { 'a b.txt', [[@./a\ b.txt]] },
      { "it's.txt", [[@./it\'s.txt]] },
      { 'ü/日本.txt', '@./ü/日本.txt' },
      { 'x]}.txt', [[@./x\]\}.txt]] },
    }
    for _, case in ipairs(cases) do
      equal(at_path.form(case[1], 'gemini'), case[2])
      equal(at_path.form(case[1], 'qwen'), case[2])
    end
  end,
  names_gemini_drops_as_noise_go_as_the_plain_path = function()
    for _, name in ipairs({ 'q"x.txt', 'a...b.txt', 'FAIL x.txt', 'd/✓ ok.txt', 'AssertionError: x' }) do
      -- (a " is refused: Gemini's read_file refuses it too; names_that_cannot_arrive_exactly_are_refused)
      if not name:find('"') then
        equal(at_path.form(name, 'gemini'), '`' .. name .. '`')
      end
      assert(at_path.form(name, 'qwen'):sub(1, 3) == '@./', name)
    end
    assert(not at_path.noise('@./x.FAIL y') and not at_path.noise('@./a.b.c'))
  end,
  a_backslash_or_a_final_dot_goes_as_the_plain_path_to_both_absolute_to_qwen = function()
    equal(at_path.form([[a\b.txt]], 'gemini'), [[`a\b.txt`]])
    equal(at_path.form([[a\b.txt]], 'qwen'), '`' .. cwd .. [[/a\b.txt`]])
    equal(at_path.form('dot.', 'gemini'), '`dot.`')
    equal(at_path.form('dot.', 'qwen'), '`' .. cwd .. '/dot.`')
    equal(at_path.form('a.b', 'qwen'), '@./a.b')
  end,
  names_that_cannot_arrive_exactly_are_refused = function()
    local control, utf8 = 'a control character', 'not UTF-8'
    local cases = {
      { 'new\nline.txt', control },
      { 'tab\there.txt', control },
      { 'cr\r.txt', control },
      { 'esc\27[201~.txt', control },
      { 'del\127.txt', control },
      { 'bad\255.txt', utf8 },
      { 'cut\226\130.txt', utf8 },
      { 'surrogate\237\160\128.txt', utf8 },
      { 'c1\194\155.txt', utf8 },
    }
    for _, case in ipairs(cases) do
      for _, cli in ipairs({ 'gemini', 'qwen' }) do
        local form, why = at_path.form(case[1], cli)
        equal(form, nil)
        equal(why, case[2])
      end
    end
    local form, why = at_path.form('q"x.txt', 'gemini')
    equal(form, nil)
    equal(why, 'a " Gemini CLI cannot read')
    equal(at_path.form('q"x.txt', 'qwen'), [[@./q\"x.txt]])
    equal(at_path.form('ü/日本 ok.txt', 'gemini'), [[@./ü/日本\ ok.txt]]) -- UTF-8 and a space still go
  end,
  an_at_in_a_name_that_goes_plain_is_refused = function()
    for _, name in ipairs({ 'app/@modal/[id]/page.tsx', '@(q).txt', 'a@b"c' }) do
      local form, why = at_path.form(name, 'gemini')
      equal(form, nil)
      equal(why, 'an @ the CLI would misread')
    end
    equal(select(2, at_path.form([[@x\y]], 'qwen')), 'an @ the CLI would misread')
  end,
  a_name_with_a_twin_in_another_case_goes_to_gemini_as_the_plain_path = function()
    local root = vim.fn.tempname()
    for _, dir in ipairs({ 'Up', 'up', 'É', 'é', 'one' }) do
      vim.fn.mkdir(root .. '/' .. dir, 'p')
    end
    for _, name in ipairs({ 'up/y.txt', 'é/z.txt', 'one/README.md', 'one/readme.md', 'one/only.txt' }) do
      vim.fn.writefile({}, root .. '/' .. name)
    end
    for _, name in ipairs({ 'up/y.txt', 'é/z.txt', 'one/README.md' }) do
      local path = root .. '/' .. name
      equal(looked_form(path, 'gemini'), '`' .. path .. '`')
      equal(looked_form(path, 'qwen'), '@' .. path)
    end
    equal(looked_form(root .. '/one/only.txt', 'gemini'), '@' .. root .. '/one/only.txt')
    vim.fn.delete(root, 'rf')
  end,
  the_plain_path_is_text_and_a_code_span_no_backtick_closes = function()
    -- A control character could not arrive as itself (it would go as a picture, ␛): refused whole.
    equal(at_path.form('[x]\27[201~\r.txt', 'gemini'), nil)
    equal(at_path.form('[x]`[201~.txt', 'gemini'), '``[x]`[201~.txt``')
    equal(at_path.code('a`b[1]'), '``a`b[1]``')
    equal(at_path.code('`[1]``'), '``` `[1]`` ```')
  end,
}
