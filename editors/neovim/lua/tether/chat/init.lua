--- `:AgentChat`: the conversation in a buffer (docs/neovim.md, "Chat").
---
--- One chat buffer (`tether://chat`, markdown, scratch) per Neovim, reused: the transcript on top,
--- a separator line, and the prompt typed below it. `<CR>` in normal mode on the prompt (or `<C-s>`
--- anywhere) sends it as `tether.ask`; the turn streams in from `tether/turn`. The transcript is
--- redrawn from the state (chat/model.lua) on each notification, coalesced to one redraw per tick;
--- the prompt below the separator (found through an extmark) is never touched by a redraw.
local M = {}

local api = vim.api
local model = require('tether.chat.model')

M.NAME = 'tether://chat'
M.ns = api.nvim_create_namespace('tether_chat')

---@class tether.Chat
---@field bufnr integer
---@field client_id integer
---@field state table
---@field rows table<integer, table>
---@field sep integer extmark id of the separator line
---@field pending boolean a redraw is scheduled

---@type tether.Chat?
M.current = nil

local turn_counter = 0

local function log()
  return require('tether.log')
end

local function lsp()
  return require('tether.lsp')
end

local function client_of(chat)
  local client = vim.lsp.get_client_by_id(chat.client_id)
  if client == nil then
    return nil, 'the tether language server of this chat has stopped: open a file of the workspace and :AgentChat again'
  end
  return client, nil
end

local function place_separator(chat, row)
  chat.sep = api.nvim_buf_set_extmark(chat.bufnr, M.ns, row, 0, { id = chat.sep, line_hl_group = 'TetherHint' })
end

--- The separator's row (0-based). The buffer is yours to edit: when the separator line was deleted
--- or changed (its mark then sits on another line), a new one is put back where the mark is, so
--- the next redraw never takes the message for the transcript, nor sends transcript as message.
local function sep_row(chat)
  local row = api.nvim_buf_get_extmark_by_id(chat.bufnr, M.ns, chat.sep, {})[1]
  if row == nil or api.nvim_buf_get_lines(chat.bufnr, row, row + 1, false)[1] ~= model.SEPARATOR then
    row = row or api.nvim_buf_line_count(chat.bufnr)
    api.nvim_buf_set_lines(chat.bufnr, row, row, false, { model.SEPARATOR })
    place_separator(chat, row)
  end
  return row
end

--- The first transcript row (0-based) whose text or highlight differs from what the buffer shows.
--- What was drawn last is compared while the buffer is as the last redraw left it (changedtick);
--- after any edit by hand the buffer itself is read.
local function first_change(chat, lines, groups, old_sep)
  local drawn = chat.drawn
  local shown = drawn and drawn.tick == api.nvim_buf_get_changedtick(chat.bufnr) and drawn.lines
    or api.nvim_buf_get_lines(chat.bufnr, 0, old_sep, false)
  local old_groups = drawn and drawn.groups or {}
  local n = math.min(#shown, #lines)
  for i = 1, n do
    if shown[i] ~= lines[i] or old_groups[i - 1] ~= groups[i - 1] then
      return i - 1
    end
  end
  return n
end

--- Redraw the transcript above the separator now. Windows whose cursor is in the prompt keep it
--- there; windows in the transcript that were at its end follow it (the text streams in view).
---
--- Only the rows from the first that changed are replaced (a delta changes the last lines), and the
--- redraw is kept out of the undo history: `u` is for what you type, and a history holding every
--- redraw of a long transcript grew by hundreds of megabytes in one streamed answer.
function M.redraw(chat)
  chat.pending = false
  if not api.nvim_buf_is_valid(chat.bufnr) then
    return
  end
  local lines, hls, rows = model.render(chat.state)
  local groups = {}
  for _, h in ipairs(hls) do
    groups[h[1]] = h[4]
  end
  local old_sep = sep_row(chat)
  local cursors = {}
  for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
    local row, col = unpack(api.nvim_win_get_cursor(win))
    cursors[win] = { row = row - 1, col = col, in_prompt = row - 1 > old_sep, following = row - 1 >= old_sep - 1 }
  end
  local from = first_change(chat, lines, groups, old_sep)
  local undolevels = vim.bo[chat.bufnr].undolevels
  vim.bo[chat.bufnr].undolevels = -1
  api.nvim_buf_set_lines(chat.bufnr, from, old_sep, false, vim.list_slice(lines, from + 1))
  vim.bo[chat.bufnr].undolevels = undolevels
  local new_sep = sep_row(chat)
  api.nvim_buf_clear_namespace(chat.bufnr, M.ns, from, new_sep)
  for row = from, #lines - 1 do
    local group = groups[row]
    if group then
      api.nvim_buf_set_extmark(chat.bufnr, M.ns, row, 0, { end_row = row, end_col = #lines[row + 1], hl_group = group })
    end
  end
  chat.rows = rows
  chat.drawn = { lines = lines, groups = groups, tick = api.nvim_buf_get_changedtick(chat.bufnr) }
  for win, c in pairs(cursors) do
    if api.nvim_win_is_valid(win) then
      local target = c.row + (new_sep - old_sep)
      if not c.in_prompt and c.following then
        target = new_sep - 1
      elseif not c.in_prompt then
        target = math.min(c.row, new_sep - 1)
      end
      pcall(api.nvim_win_set_cursor, win, { target + 1, c.col })
    end
  end
end

function M.schedule_redraw(chat)
  if chat.pending then
    return
  end
  chat.pending = true
  vim.schedule(function()
    M.redraw(chat)
  end)
end

--- The chat buffer, created once (transcript, separator, one empty prompt line, keys) and reused.
function M.buffer()
  local chat = M.current
  if chat and api.nvim_buf_is_valid(chat.bufnr) then
    return chat
  end
  local bufnr = vim.fn.bufnr('^' .. vim.pesc(M.NAME) .. '$')
  if bufnr == -1 then
    bufnr = api.nvim_create_buf(true, true)
    api.nvim_buf_set_name(bufnr, M.NAME)
  end
  vim.bo[bufnr].buftype = 'nofile'
  vim.bo[bufnr].bufhidden = 'hide'
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = 'markdown'
  api.nvim_buf_set_lines(bufnr, 0, -1, false, { model.SEPARATOR, '' })
  chat = { bufnr = bufnr, state = model.new(), rows = {}, pending = false }
  -- Right gravity (the default): lines the redraw puts above the separator push the mark down.
  place_separator(chat, 0)
  M.current = chat
  require('tether.chat.keys').attach(chat)
  return chat
end

--- Show the chat buffer (a split on the right unless it is visible) with the cursor on the prompt.
local function show(chat)
  local win = vim.fn.bufwinid(chat.bufnr)
  if win == -1 then
    vim.cmd('botright vsplit')
    api.nvim_win_set_buf(0, chat.bufnr)
    vim.wo.wrap, vim.wo.linebreak = true, true
  else
    api.nvim_set_current_win(win)
  end
  M.redraw(chat)
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(chat.bufnr), 0 })
end

--- `:AgentChat [id]` / `:AgentChat!`.
---@param opts { id?: string, fresh?: boolean, bufnr?: integer }
function M.open(opts)
  local client, err = lsp().get_client(opts.bufnr)
  if not client then
    return log().error(err)
  end
  local chat = M.buffer()
  if chat.state.running and (opts.fresh or opts.id) then
    return log().error('a turn is running in the chat: <C-c> there stops it first')
  end
  chat.client_id = client.id
  if opts.fresh then
    chat.state = model.new()
  end
  if not opts.id then
    return show(chat)
  end
  lsp().exec('tether.conversation', { id = opts.id }, { client = client }, function(e, res)
    if e then
      return log().error(e)
    end
    chat.state = model.from_conversation(res)
    show(chat)
  end)
end

--- A card reached its final state with a proposal: fetch its hunks to draw them.
local function fetch_hunks(chat, card)
  local client = client_of(chat)
  if not client or card.fetching then
    return
  end
  card.fetching = true
  lsp().exec('tether.proposal', { id = card.proposal_id }, { client = client }, function(e, res)
    card.fetching = false
    if e then
      return log().warn(e)
    end
    card.hunks = (res.proposal or {}).hunks or {}
    M.schedule_redraw(chat)
  end)
end

--- The prompt typed below the separator, and clear it.
local function take_prompt(chat)
  local first = sep_row(chat) + 1
  local text = vim.trim(table.concat(api.nvim_buf_get_lines(chat.bufnr, first, -1, false), '\n'))
  if text ~= '' then
    api.nvim_buf_set_lines(chat.bufnr, first, -1, false, { '' })
  end
  return text
end

--- Send the prompt as one agent turn.
function M.send(chat)
  if chat.state.running then
    return log().error('the agent is still answering: wait, or <C-c> stops the turn')
  end
  local client, err = client_of(chat)
  if not client then
    return log().error(err)
  end
  local prompt = take_prompt(chat)
  if prompt == '' then
    return log().error('type your message below the line, then <CR> (normal mode) or <C-s>')
  end
  turn_counter = turn_counter + 1
  local turn_id = string.format('nvim-%d-%d', vim.fn.getpid(), turn_counter)
  model.begin_turn(chat.state, prompt, turn_id)
  M.redraw(chat)
  local args = { prompt = prompt, conversationId = chat.state.conversation_id, turnId = turn_id }
  lsp().exec('tether.ask', args, { client = client }, function(e, res)
    if chat.state.turn_id ~= turn_id then
      return
    end
    if e then
      table.insert(chat.state.entries, { kind = 'stopped', reason = 'error', message = e })
      model.end_turn(chat.state, 'error', nil)
    else
      chat.state.conversation_id = res.conversationId or chat.state.conversation_id
      model.fill_from_result(chat.state, res)
      for _, card in pairs(chat.state.cards) do
        if card.proposal_id and not card.hunks then
          fetch_hunks(chat, card)
        end
      end
      model.end_turn(chat.state, res.stopReason, res.message)
    end
    for _, c in ipairs(vim.lsp.get_clients({ name = lsp().NAME })) do
      require('tether.preview').refresh(c)
    end
    M.schedule_redraw(chat)
  end)
end

--- Stop the running turn (`tether.cancel {turnId}`).
function M.cancel(chat)
  if not chat.state.running then
    return log().info('no turn is running')
  end
  local client, err = client_of(chat)
  if not client then
    return log().error(err)
  end
  lsp().exec('tether.cancel', { turnId = chat.state.turn_id }, { client = client }, function(e)
    if e then
      log().error(e)
    end
  end)
end

--- The `tether/turn` notification handler.
function M.on_turn(_, params, ctx)
  local chat = M.current
  if chat == nil or (ctx and ctx.client_id ~= chat.client_id) then
    return
  end
  if not model.apply(chat.state, params) then
    return
  end
  local card = params.kind == 'tool' and chat.state.cards[params.id] or nil
  if card and card.proposal_id and card.state ~= 'running' and not card.hunks then
    fetch_hunks(chat, card)
  end
  M.schedule_redraw(chat)
end

--- Accept or reject the hunk (or, on the card's line, every pending hunk) under the cursor.
---@param command 'tether.accept'|'tether.reject'
function M.decide(chat, at, command)
  local card = at.card
  if not card.proposal_id then
    return log().error('no proposal here: ga / gr act on a proposed edit or its hunks')
  end
  local client, err = client_of(chat)
  if not client then
    return log().error(err)
  end
  local args = { id = card.proposal_id, hunks = at.hunk and { at.hunk } or nil }
  lsp().exec(command, args, { client = client }, function(e, res)
    if e then
      return log().error(e)
    end
    card.hunks = (res.proposal or {}).hunks or card.hunks
    require('tether.preview').refresh(client)
    M.schedule_redraw(chat)
  end)
end

function M.open_diff(chat, at)
  if not at.card.proposal_id then
    return log().error('no proposal here: gd opens the diff of a proposed edit')
  end
  require('tether.diff').open(chat.bufnr, at.card.proposal_id)
end

--- Answer the card's open approval question from the chat.
---@param title string an approval choice title ('Allow once', 'Deny', …)
function M.answer(at, title)
  local q = at.card.question
  if not q or q.answer then
    return log().error('no open question here')
  end
  local approve = require('tether.approve')
  if title ~= 'Deny' then
    if not approve.answer(q.id, title) then
      log().error('the server no longer waits for this answer')
    end
    return
  end
  vim.ui.input({ prompt = approve.MESSAGE_PROMPT }, function(message)
    if not approve.answer(q.id, 'Deny', message) then
      log().error('the server no longer waits for this answer')
    end
  end)
end

--- `User TetherApprovalAsked` / `TetherApprovalAnswered` (approve.lua): the question on its card.
function M.on_approval(ev)
  local chat = M.current
  if chat == nil or type(ev.data) ~= 'table' then
    return
  end
  if ev.match == 'TetherApprovalAsked' then
    if not chat.state.running then
      return
    end
    model.ask(chat.state, ev.data)
  elseif not model.answered(chat.state, ev.data.id, ev.data.choice, ev.data.message) then
    return
  end
  M.schedule_redraw(chat)
end

--- Conversation ids for `:AgentChat <Tab>` (newest first).
function M.complete(arglead)
  local client = lsp().get_client()
  if not client then
    return {}
  end
  local res = lsp().exec_sync(client, 'tether.conversations', {}, 2000)
  local ids = {}
  for _, c in ipairs(res and res.conversations or {}) do
    if vim.startswith(c.id, arglead) then
      table.insert(ids, c.id)
    end
  end
  return ids
end

return M
