--- The chat's state and how it is drawn: pure functions, no buffers, no LSP (tested on fixture streams).
---
--- The state is a list of entries (the person's prompts, the agent's text blocks, one card per tool
--- call, notices, how a turn stopped) folded from the server's `tether/turn` notifications
--- (docs/lsp.md, "Chat") and from a stored conversation (`tether.conversation`). `render` turns it
--- into lines, highlights and a map from row to what the row is about (a card, a hunk, a question),
--- which the buffer's keys act on.
local M = {}

---@class tether.ChatCard
---@field kind 'tool'
---@field id string
---@field name string
---@field summary string
---@field state string running|executed|failed|denied|dry_run|proposed|cancelled|done
---@field rule string?
---@field reason string?
---@field proposal_id string?
---@field hunks table[]? the proposal's hunks (`tether.proposal`), once fetched
---@field output string?
---@field show_output boolean?
---@field question table? `{id, command, rule, reason, answer?: {choice, message?}}`

---@return table state
function M.new()
  return {
    entries = {},
    cards = {}, ---@type table<string, tether.ChatCard>
    conversation_id = nil,
    title = nil,
    turn_id = nil,
    running = false,
    cost = 0,
    input_tokens = 0,
    output_tokens = 0,
    text_entry = nil, -- the text block the next delta of the running turn extends
    last_seq = nil,
  }
end

--- The person sent `prompt` as turn `turn_id` (drawn at once, before the server answers).
function M.begin_turn(state, prompt, turn_id)
  table.insert(state.entries, { kind = 'user', text = prompt })
  state.turn_id, state.running, state.text_entry, state.last_seq = turn_id, true, nil, nil
  state.title = state.title or vim.split(prompt, '\n', { plain = true })[1]
end

local function card_for(state, id)
  local card = state.cards[id]
  if card == nil then
    card = { kind = 'tool', id = id, name = '?', summary = '', state = 'running' }
    state.cards[id] = card
    table.insert(state.entries, card)
  end
  return card
end

--- Fold one `tether/turn` notification into the state. Returns false for a notification of
--- another turn (the view ignores it) or a malformed one.
---@param state table
---@param u table the notification's params
---@return boolean applied
function M.apply(state, u)
  if type(u) ~= 'table' or u.turnId ~= state.turn_id or type(u.kind) ~= 'string' then
    return false
  end
  if u.kind == 'tool' and type(u.id) ~= 'string' then
    return false -- a card is found by its id: without one there is nothing to draw or update
  end
  state.last_seq = u.seq
  if type(u.conversationId) == 'string' then
    state.conversation_id = u.conversationId
  end
  local kind = u.kind
  if kind == 'started' then
    state.running = true
  elseif kind == 'text' then
    local block = u.block or 0
    if state.text_entry == nil or state.text_entry.block ~= block then
      state.text_entry = { kind = 'assistant', block = block, text = '' }
      table.insert(state.entries, state.text_entry)
    end
    state.text_entry.text = state.text_entry.text .. tostring(u.delta or '')
  elseif kind == 'tool' then
    local card = card_for(state, u.id)
    card.name = tostring(u.name or card.name)
    card.summary = tostring(u.summary or card.summary)
    card.state = tostring(u.state or card.state)
    card.rule, card.reason = u.rule or card.rule, u.reason or card.reason
    card.proposal_id = type(u.proposalId) == 'string' and u.proposalId or card.proposal_id
    card.output = type(u.output) == 'string' and u.output or card.output
    state.text_entry = nil -- text after a tool call is a new paragraph
  elseif kind == 'usage' then
    local usage = type(u.usage) == 'table' and u.usage or {}
    state.input_tokens = state.input_tokens + (tonumber(usage.inputTokens) or 0)
    state.output_tokens = state.output_tokens + (tonumber(usage.outputTokens) or 0)
    state.turn_cost = tonumber(u.cost) or state.turn_cost
  elseif kind == 'notice' then
    table.insert(state.entries, { kind = 'notice', text = tostring(u.text or '') })
  elseif kind == 'stopped' then
    M.end_turn(state, u.stopReason, u.message)
  end
  return true
end

--- The turn is over (its `stopped` notification, or the `tether.ask` answer or error, whichever
--- comes first: the second is a no-op).
function M.end_turn(state, stop_reason, message)
  if not state.running then
    return
  end
  state.running = false
  state.cost = state.cost + (state.turn_cost or 0)
  state.turn_cost = nil
  state.text_entry = nil
  for _, card in pairs(state.cards) do
    if card.state == 'running' then
      card.state = 'cancelled'
    end
    if card.question and not card.question.answer then
      card.question.answer = { choice = 'deny', message = 'the turn ended first' }
    end
  end
  if stop_reason ~= nil and stop_reason ~= 'end_turn' then
    table.insert(state.entries, { kind = 'stopped', reason = tostring(stop_reason), message = message })
  end
end

--- The `tether.ask` answer, for a turn whose notifications never came (a server or client without
--- `chat`): its text and tool calls are drawn at the end. A streamed turn is left as it is.
---@param res table `{text, toolCalls: [{id?, name, summary, verdict, reason?, proposalId?, isError}]}`
function M.fill_from_result(state, res)
  for i = #state.entries, 1, -1 do
    local kind = state.entries[i].kind
    if kind == 'user' then
      break
    end
    if kind == 'assistant' or kind == 'tool' then
      return
    end
  end
  if type(res.text) == 'string' and res.text ~= '' then
    table.insert(state.entries, { kind = 'assistant', text = res.text })
  end
  for n, call in ipairs(type(res.toolCalls) == 'table' and res.toolCalls or {}) do
    local card = card_for(state, tostring(call.id or ('result-' .. tostring(state.turn_id) .. '-' .. n)))
    card.name = tostring(call.name or '?')
    card.summary = tostring(call.summary or card.name)
    card.state = call.proposalId and 'proposed' or (call.isError and 'failed' or tostring(call.verdict or 'done'))
    card.reason, card.proposal_id = call.reason, call.proposalId
  end
end

--- The approval question the server asked while a tool call ran: shown on that call's card (the
--- newest running card of the same tool), or as its own card when there is none.
---@param q table `tether/approve` params
function M.ask(state, q)
  local target
  for i = #state.entries, 1, -1 do
    local e = state.entries[i]
    if e.kind == 'tool' and e.state == 'running' and e.name == q.tool and not e.question then
      target = e
      break
    end
  end
  if target == nil then
    target = card_for(state, 'question-' .. tostring(q.id))
    target.name = tostring(q.tool or '?')
    target.summary = string.format('%s(%s)', target.name, tostring(q.command or ''))
  end
  target.question = { id = q.id, command = q.command, rule = q.rule, reason = q.reason }
end

--- The answer to question `id`; true when a card showed it.
function M.answered(state, id, choice, message)
  for _, card in pairs(state.cards) do
    if card.question and card.question.id == id then
      card.question.answer = { choice = choice, message = message }
      return true
    end
  end
  return false
end

--- A stored call's one-line summary, in the server's `name(argument)` shape.
local function summary_of(name, input)
  local arg = type(input) == 'table' and (input.path or input.command or input.pattern) or nil
  return arg and string.format('%s(%s)', name, tostring(arg)) or name
end

--- A stored conversation (`tether.conversation`) as a state to continue.
---@param conv table `{id, title, entries: [{role, text} | {role: 'tool', id, name, input, output?, isError?}]}`
function M.from_conversation(conv)
  local state = M.new()
  state.conversation_id, state.title = conv.id, conv.title
  state.cost = tonumber(conv.cost) or 0
  state.resumed = true -- the stored conversation has its cost but no token counts
  for _, e in ipairs(conv.entries or {}) do
    if e.role == 'user' then
      table.insert(state.entries, { kind = 'user', text = tostring(e.text or '') })
    elseif e.role == 'assistant' then
      table.insert(state.entries, { kind = 'assistant', text = tostring(e.text or '') })
    elseif e.role == 'tool' then
      local card = card_for(state, tostring(e.id or ('tool-' .. #state.entries)))
      card.name = tostring(e.name or '?')
      card.summary = summary_of(card.name, e.input)
      card.state = e.isError and 'failed' or 'done'
      card.output = type(e.output) == 'string' and e.output or nil
    end
  end
  return state
end

-- Drawing ---------------------------------------------------------------------------------------------

local STATE_HL = {
  running = 'TetherHint',
  executed = 'TetherOk',
  done = 'TetherOk',
  proposed = 'TetherTool',
  dry_run = 'TetherTool',
  denied = 'TetherDenied',
  failed = 'TetherError',
  cancelled = 'TetherDenied',
}

local ANSWER_WORDS = {
  allow_once = '✓ allowed once',
  allow_session = '✓ allowed for this session',
  allow_always = '✓ always allowed (rule added to your user config)',
  deny = '✗ denied',
}

local one_line = require('tether.ui').one_line

M.MAX_OUTPUT_LINES = 200

--- The state as lines (0-based highlight rows, like ui.scratch) and the row map:
--- `rows[row] = {card = card}`, `{card = card, hunk = n}` or `{card = card, question = true}`.
---@return string[] lines, table[] hls, table<integer, table> rows
function M.render(state)
  local lines, hls, rows = {}, {}, {}
  local function add(text, group, at)
    if group then
      table.insert(hls, { #lines, 0, -1, group })
    end
    if at then
      rows[#lines] = at
    end
    table.insert(lines, text)
  end
  add('# Tether chat' .. (state.title and (': ' .. one_line(state.title)) or ''), 'TetherHeader')
  add(state.conversation_id and ('conversation ' .. state.conversation_id) or 'new conversation', 'TetherHint')
  -- The kind of the last entry drawn in this answer (false before its header). A text block is a
  -- paragraph of its own: a blank line parts it from what comes before and after (a Markdown
  -- renderer would otherwise run it into the next block or the card line).
  local prev = false
  for _, e in ipairs(state.entries) do
    if e.kind == 'user' then
      add('')
      add('## You', 'TetherHeader')
      vim.list_extend(lines, vim.split(e.text, '\n', { plain = true }))
      prev = false
    else
      if prev == false then
        add('')
        add('## Tether', 'TetherHeader')
      elseif prev == 'assistant' or e.kind == 'assistant' then
        add('')
      end
      prev = e.kind
      if e.kind == 'assistant' then
        for _, l in ipairs(vim.split(e.text, '\n', { plain = true })) do
          add(l)
        end
      elseif e.kind == 'notice' then
        add('ⓘ ' .. one_line(e.text), 'TetherHint')
      elseif e.kind == 'stopped' then
        add(
          string.format('[stopped: %s%s]', e.reason, e.message and (' — ' .. one_line(e.message)) or ''),
          'TetherDenied'
        )
      elseif e.kind == 'tool' then
        -- The server's summary already names the tool: `write_file(README.md)`.
        -- The policy rule that decided the call stands after its state (why it ran, was asked or was
        -- refused); a refusal also says why in words.
        local head = string.format('● %s — %s', e.summary ~= '' and one_line(e.summary) or e.name, e.state)
        if e.rule then
          head = head .. ' (' .. one_line(e.rule) .. ')'
        end
        if e.proposal_id then
          head = head .. ' · ' .. e.proposal_id .. ' (gd diff, ga/gr all)'
        end
        if (e.state == 'denied' or e.state == 'failed') and e.reason then
          head = head .. ': ' .. one_line(e.reason)
        end
        add(head, STATE_HL[e.state] or 'TetherTool', { card = e })
        for _, h in ipairs(e.hunks or {}) do
          local hint = h.state == 'pending' and '  (ga accept · gr reject)' or ''
          add(
            string.format('    hunk %d %s — %s%s', h.index, one_line(h.header), h.state, hint),
            h.state == 'accepted' and 'TetherOk' or (h.state == 'rejected' and 'TetherDenied' or nil),
            { card = e, hunk = h.index }
          )
        end
        local q = e.question
        if q then
          add(
            string.format('    ? allow `%s`? %s', one_line(q.command), one_line(q.reason or q.rule or '')),
            'TetherDenied',
            { card = e, question = true }
          )
          if q.answer then
            local words = ANSWER_WORDS[q.answer.choice] or ('✗ ' .. tostring(q.answer.choice))
            if q.answer.message then
              words = words .. ': ' .. one_line(q.answer.message)
            end
            add('      ' .. words, q.answer.choice == 'deny' and 'TetherDenied' or 'TetherOk', { card = e, question = true })
          else
            add('      ga allow once · gA allow for this session · gr deny', 'TetherHint', { card = e, question = true })
          end
        end
        if e.output and e.output ~= '' then
          local out = vim.split(e.output, '\n', { plain = true, trimempty = true })
          if e.show_output then
            for i = 1, math.min(#out, M.MAX_OUTPUT_LINES) do
              add('      ' .. out[i], 'TetherHint', { card = e })
            end
            if #out > M.MAX_OUTPUT_LINES then
              add(string.format('      … %d more lines', #out - M.MAX_OUTPUT_LINES), 'TetherHint', { card = e })
            end
          else
            add(string.format('    output: %d line%s (<Tab> shows)', #out, #out == 1 and '' or 's'), 'TetherHint', {
              card = e,
            })
          end
        end
      end
    end
  end
  add('')
  local cost = state.cost + (state.turn_cost or 0)
  local footer = string.format(
    'cost $%.4f · tokens%s %d in / %d out',
    cost,
    state.resumed and ' since resumed:' or '',
    state.input_tokens,
    state.output_tokens
  )
  if state.running then
    footer = footer .. ' · running… (<C-c> stops)'
  end
  add(footer, 'TetherHint')
  return lines, hls, rows
end

M.SEPARATOR = '──── your message below · <CR> (normal mode) or <C-s> sends ────'

return M
