--[[
  Writes one batch of the delivery history, in order (history-writer.ts), then drops the oldest
  entries past the cap. KEYS[1] the sequence that numbers entries; ARGV[1] the history's key base;
  ARGV[2] the batch, as JSON; ARGV[3] the cap (most entries kept); ARGV[4] the days that may
  still be kept, oldest first, separated by spaces. Returns how many entries it dropped. An entry is written once per delivery key (a routing that runs again, a delivery
  sent again after a failover: the same entry); an outcome line is appended to the entry of its
  delivery key. Another worker may finish a run before the entry of its routing is written: its
  line waits under `pending:`, and the entry takes it when it comes. A line with `once` (a run
  found completed before) is written only if its handler's newest line is no completion already.
]]
local base = ARGV[1]
local ops = cjson.decode(ARGV[2])
-- A word's numbers from the whole batch go out in one APPEND: entries share most words.
local postings, terms = {}, {}
local function post(day, word, seq, expireAt)
  local term = day .. ':' .. word
  local list = postings[term]
  if not list then
    list = { day = day, word = word, expireAt = expireAt }
    postings[term] = list
    terms[#terms + 1] = term
  end
  list[#list + 1] = struct.pack('>I4', tonumber(seq))
end
local function failed(day, seq, expireAt)
  post(day, '!failed', seq, expireAt)
end
-- Whether the newest of `handler`'s outcome lines in `text` says completed: the one a reader
-- keeps (delivery-history.ts: by time, the later line of equal times).
local function completedIn(text, handler)
  local head, newest, state = '{"h":"' .. handler .. '","s":', nil, nil
  for line in string.gmatch(text, '[^\n]+') do
    if string.sub(line, 1, #head) == head then
      local ok, outcome = pcall(cjson.decode, line)
      if ok and (newest == nil or outcome.at >= newest) then
        newest, state = outcome.at, outcome.s
      end
    end
  end
  return state == 'c'
end
-- The newest entry of each day of the batch: a day whose newest is dropped is dropped whole.
local newestOfDay, batchDays = {}, {}
for _, op in ipairs(ops) do
  local ids = base .. 'ids:' .. op.day
  if op.line then
    local seq = redis.call('HGET', ids, 'k:' .. op.key)
    if not seq then
      local pending = base .. 'pending:' .. op.day .. ':' .. op.key
      if not (op.once and completedIn(redis.call('GET', pending) or '', op.once)) then
        redis.call('APPEND', pending, '\n' .. op.line)
        redis.call('PEXPIREAT', pending, op.expireAt)
      end
    else
      local entry = base .. 'e:' .. seq
      local text = redis.call('GET', entry)
      if text and not (op.once and completedIn(text, op.once)) then
        -- SET, not APPEND: an appended string keeps room to grow, as large again as itself.
        redis.call('SET', entry, text .. '\n' .. op.line, 'KEEPTTL')
        if op.failed then failed(op.day, seq, op.expireAt) end
      end
    end
  elseif redis.call('HEXISTS', ids, 'k:' .. op.key) == 1 then
    -- Routed again: after a routing that failed for good, the entry says it is routed now.
    local entry = base .. 'e:' .. redis.call('HGET', ids, 'k:' .. op.key)
    local text = redis.call('GET', entry)
    if text and string.find(text, '"h":"routing","s":"f"', 1, true) then
      redis.call('SET', entry, text .. '\n' .. op.routed, 'KEEPTTL')
    end
  else
    local seq = redis.call('INCR', KEYS[1])
    local pending = base .. 'pending:' .. op.day .. ':' .. op.key
    local early = redis.call('GET', pending) or ''
    redis.call('SET', base .. 'e:' .. seq, op.entry .. early, 'PXAT', op.expireAt)
    if early ~= '' then
      redis.call('DEL', pending)
      for line in string.gmatch(early, '[^\n]+') do
        if cjson.decode(line).s == 'f' then failed(op.day, seq, op.expireAt) end
      end
    end
    redis.call('HSET', ids, 'k:' .. op.key, seq)
    if op.r then redis.call('HSET', ids, 'r:' .. op.r, seq) end
    if op.f then redis.call('HSET', ids, 'f:' .. op.f, seq) end
    redis.call('PEXPIREAT', ids, op.expireAt)
    redis.call('SET', base .. 'first:' .. op.day, seq, 'NX', 'PXAT', op.expireAt)
    if not newestOfDay[op.day] then batchDays[#batchDays + 1] = op.day end
    newestOfDay[op.day] = { seq = seq, expireAt = op.expireAt }
    for word in string.gmatch(op.words, '%S+') do post(op.day, word, seq, op.expireAt) end
  end
end
-- An appended string keeps room to grow, as large again as itself, and never gives it back: how
-- much depends on the sizes of the batches that made it (a day's word lists up to twice their
-- bytes). So `w:` takes the newest numbers, and once it holds a sixteenth of what `o:` holds
-- (SEAL_BYTES at least), both are written into `o:`, set whole, without room: a word's spare
-- room stays within about an eighth of it, and each number is copied about 17 times in its day.
local SEAL_BYTES = 1024
-- The words new to their day, by day: `words:<day>` lists them, for the day to be dropped whole.
local newWords = {}
for _, term in ipairs(terms) do
  local list = postings[term]
  local newest, older = base .. 'w:' .. term, base .. 'o:' .. term
  local length = redis.call('APPEND', newest, table.concat(list))
  -- A day's keys all expire at the same time: set it when the key is made.
  if length == 4 * #list then
    redis.call('PEXPIREAT', newest, list.expireAt)
    if redis.call('EXISTS', older) == 0 then
      local words = newWords[list.day] or { expireAt = list.expireAt }
      newWords[list.day] = words
      words[#words + 1] = list.word
    end
  end
  if length >= SEAL_BYTES and length * 16 >= redis.call('STRLEN', older) then
    local kept = redis.call('GET', older) or ''
    redis.call('SET', older, kept .. redis.call('GET', newest), 'PXAT', list.expireAt)
    redis.call('DEL', newest)
  end
end
for day, words in pairs(newWords) do
  local key = base .. 'words:' .. day
  -- unpack takes a few thousand arguments at most.
  for start = 1, #words, 1000 do
    redis.call('RPUSH', key, unpack(words, start, math.min(start + 999, #words)))
  end
  redis.call('PEXPIREAT', key, words.expireAt)
end
for _, day in ipairs(batchDays) do
  local newest = newestOfDay[day]
  redis.call('SET', base .. 'last:' .. day, newest.seq, 'PXAT', newest.expireAt)
end

--[[
  The cap: every number below `floor` is dropped (readers show none of them). Past the cap the
  oldest entries go, with their fields in `ids:<day>`, at most MOST_DROPPED a call (a cap lowered
  a long way is reached over a few calls); then a day whose newest number is below the floor
  loses its word lists, MOST_WORDS_DROPPED words a call, then its other keys. Numbers of dropped
  entries stay in the word lists of days still partly kept: readers skip those below the floor.
]]
local MOST_DROPPED, MOST_WORDS_DROPPED = 200, 200
local cap = tonumber(ARGV[3])
local floorKey = base .. 'floor'
local floor = tonumber(redis.call('GET', floorKey) or '1')
local target = tonumber(redis.call('GET', KEYS[1]) or '0') - cap + 1
local days = {}
for day in string.gmatch(ARGV[4], '%S+') do days[#days + 1] = day end
local dropped = 0
if floor < target then
  -- Numbers below the first of the days kept have expired with their day: no need to visit them.
  for _, day in ipairs(days) do
    local first = tonumber(redis.call('GET', base .. 'first:' .. day))
    if first then
      if first > floor then floor = math.min(first, target) end
      break
    end
  end
  -- A field of `ids:` goes only if it still names this entry: another delivery of the same record
  -- or feedback id, newer, may have taken it.
  local function forget(ids, field, seq)
    if redis.call('HGET', ids, field) == seq then redis.call('HDEL', ids, field) end
  end
  local stop = math.min(target, floor + MOST_DROPPED)
  while floor < stop do
    local entry = base .. 'e:' .. floor
    local text = redis.call('GET', entry)
    if text then
      local ok, stored = pcall(cjson.decode, string.match(text, '^[^\n]*'))
      if ok then
        local ids, seq = base .. 'ids:' .. math.floor(stored.t / 86400000), tostring(floor)
        forget(ids, 'k:' .. stored.k, seq)
        if stored.id then forget(ids, 'r:' .. stored.id, seq) end
        if stored.f then forget(ids, 'f:' .. string.format('%.0f', stored.f), seq) end
      end
      redis.call('DEL', entry)
      dropped = dropped + 1
    end
    floor = floor + 1
  end
  redis.call('SET', floorKey, floor)
end
-- Nothing was ever dropped while the floor is 1: no day to drop whole.
for _, day in ipairs(floor > 1 and days or {}) do
  local last = tonumber(redis.call('GET', base .. 'last:' .. day))
  if last and last < floor then
    local words = redis.call('LPOP', base .. 'words:' .. day, MOST_WORDS_DROPPED)
    if words then
      for _, word in ipairs(words) do
        redis.call('UNLINK', base .. 'w:' .. day .. ':' .. word, base .. 'o:' .. day .. ':' .. word)
      end
    else
      redis.call('UNLINK', base .. 'ids:' .. day, base .. 'first:' .. day, base .. 'last:' .. day)
    end
    break
  end
end
return dropped
