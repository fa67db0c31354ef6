--[[
  A batch of one project's deliveries that entered join their groups, in order, each once
  (similar-grouping.ts), and each learns which of the worker's windows its arrival crossed. In
  order: a delivery whose best match is an earlier one of the batch takes that one's group as it
  was just stored, as if they had joined one at a time.
  KEYS[1] the `of` hash (lines by their field: fieldOf in line-fields.lua), KEYS[2] the groups zset,
  KEYS[3] the stream, KEYS[4] the operator's detaches (similar-detach.lua).
  ARGV: 1 key base, 2 ttl ms, 3 windows (JSON: a list of [atLeast, withinMs]); then per delivery,
  nine: its key, entry id, arrival ms, its own group id (its entry id: the id of the group it
  starts when it joins none), itself as a group's first (stored-grouping.ts: '' when its key is
  made of its record id, as its line keeps it when it starts its group), the best match's
  key ('' for none above the threshold), the best match's group and its first as the worker
  computed them (used when the match has not joined yet), its matches (as stored).
  Returns each delivery's stored value (stored-grouping.ts): the one already there when it had
  joined before (a routing that runs again, or one an operator detached), so a delivery is in one
  group only and counted once.
  A group of one keeps no members key and is not in the project's groups (most groups are of
  one: issue 30, memory): its one member is its first, whose arrival is in its stored value. The
  second to join adds the first to a members key, and the group to the project's groups.
]]
local of, groups, docs = KEYS[1], KEYS[2], KEYS[3]
local base, ttl = ARGV[1], tonumber(ARGV[2])
local windows = cjson.decode(ARGV[3])
-- Only a project an operator has detached from can have a group whose first was taken out.
local detachedAny = redis.call('EXISTS', KEYS[4]) == 1

local function entryMs(id)
  return tonumber(string.match(id, '^(%d+)'))
end

-- A stored arrival (stored-grouping.ts): ms before the entry id's time, or, in a line written
-- before, the time itself (10^11 or more).
local function arrivalOf(e, stored)
  local n = tonumber(stored)
  if n >= 1e11 or n <= -1e11 then return n end
  return entryMs(e) - n
end

-- A first stored empty is the delivery itself, whose key is made of its record id.
local function firstOf(key, first)
  if first ~= '' then return first end
  local recordId = string.sub(key, string.len('feedback.created:') + 1)
  return string.len(recordId) .. ':' .. recordId
end

-- The first of a group of one, as the group's second joins: only while it is stored in this
-- group (one that has not joined yet adds itself when it does; one detached or dropped is not
-- a member), at its arrival as stored, which it returns (nil when it is not added).
local function addFirst(members, group, first)
  local length, rest = string.match(first, '^(%d+):(.*)$')
  if not length then return end
  local recordId = string.sub(rest, 1, tonumber(length))
  local firstKey = string.sub(rest, tonumber(length) + 1)
  if firstKey == '' then firstKey = 'feedback.created:' .. recordId end
  local stored, where = lineOf(of, firstKey)
  if not stored then return end
  local entryField, groupField, arrived = string.match(stored, '^([^|]*)|([^|]*)|[^|]*|([^|]*)|')
  local e, g = idsOfLine(entryField, groupField)
  if g ~= group then return nil end
  local at = arrivalOf(e, arrived)
  redis.call('ZADD', members, string.format('%d', at), where)
  return at
end

-- A first as stored (stored-grouping.ts) and its key.
local function keyOfFirst(first)
  local length, rest = string.match(first, '^(%d+):(.*)$')
  if not length then return nil end
  local recordId = string.sub(rest, 1, tonumber(length))
  local firstKey = string.sub(rest, tonumber(length) + 1)
  if firstKey == '' then firstKey = 'feedback.created:' .. recordId end
  return firstKey, recordId
end

-- The group's first as it is now: its first as stored while that delivery is still in the group;
-- once an operator took it out (similar-detach.lua: the group keeps its id), the earliest member
-- left, by arrival (group-first.ts reads it the same way). A first whose line is gone or has not
-- joined yet stands.
local function firstNow(group, first)
  if not detachedAny then return first end
  local firstKey = keyOfFirst(first)
  if not firstKey then return first end
  local stored = lineOf(of, firstKey)
  if not stored or string.sub(stored, 1, 8) == 'pending:' then return first end
  local _, g = idsOfLine(string.match(stored, '^([^|]*)|([^|]*)|'))
  if g == group then return first end
  local earliest = redis.call('ZRANGE', base .. 'group:' .. group, 0, 0)[1]
  if not earliest then return first end
  -- A member is its line's field (fieldOf), or its key for a line written before that (its
  -- arrival is a time, 10^11 or more): the field is the member either way.
  local line = redis.call('HGET', of, earliest)
  if not line then return first end
  local entryField, groupField, arrived = string.match(line, '^([^|]*)|([^|]*)|[^|]*|([^|]*)|')
  local memberKey = earliest
  local arrival = tonumber(arrived) or 0
  if arrival < 1e11 and arrival > -1e11 then
    if string.sub(earliest, 1, 1) == ':' then
      memberKey = string.sub(earliest, 2)
    else
      memberKey = 'feedback.created:' .. earliest
    end
  end
  local e = idsOfLine(entryField, groupField)
  local recordId = ''
  if string.sub(memberKey, 1, 17) == 'feedback.created:' then recordId = string.sub(memberKey, 18) end
  local read = redis.call('XRANGE', docs, e, e)[1]
  if read then
    for i = 1, #read[2], 2 do
      if read[2][i] == 'r' then recordId = read[2][i + 1] end
    end
  end
  local ownKey = memberKey
  if memberKey == 'feedback.created:' .. recordId then ownKey = '' end
  return string.len(recordId) .. ':' .. recordId .. ownKey
end

local function join(key, entry, t, group, first, bestKey, bestGroup, bestFirst, matches)
  local current = lineOf(of, key)
  if current and string.sub(current, 1, 8) ~= 'pending:' then return current end
  local field = fieldOf(key)
  -- Its entry was dropped before it joined (past SIMILAR_KEEP, by a later delivery of its own
  -- batch, say): nothing of it is stored, so nothing outlives the entry. Its run sees a group of
  -- its own.
  if current ~= 'pending:' .. entry then
    local entryField = lineIdFields(entry, entry)
    return table.concat({ entryField, '', 1, string.format('%d', entryMs(entry) - t), '', '', first }, '|')
  end

  if bestKey ~= '' then
    local best = lineOf(of, bestKey)
    if best and string.sub(best, 1, 8) ~= 'pending:' then
      -- Its group (from the first two fields) and its first (the last, after six bars).
      local _, storedGroup = idsOfLine(string.match(best, '^([^|]*)|([^|]*)|'))
      group = storedGroup
      first = firstOf(bestKey, string.match(best, '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|(.*)$'))
    else
      group, first = bestGroup, bestFirst
    end
    first = firstNow(group, first)
  end

  local members = base .. 'group:' .. group
  local alone = bestKey == '' and redis.call('EXISTS', members) == 0
  -- The project's groups hold those of two or more (a group of one is not listed: issue 30,
  -- memory), scored by their last arrival; the second to join adds its group, with the first's
  -- arrival as the last before its own.
  local last = nil
  if not alone then
    last = redis.call('ZSCORE', groups, group)
    last = last and tonumber(last)
    if redis.call('EXISTS', members) == 0 then
      local firstAt = addFirst(members, group, first)
      if not last then last = firstAt end
    end
    redis.call('ZADD', members, t, field)
    redis.call('PEXPIRE', members, ttl)
    local latest = t
    if last and last > t then latest = last end
    redis.call('ZADD', groups, latest, group)
    redis.call('PEXPIRE', groups, ttl)
  end

  -- Deliveries join out of their arrival order (retries, several workers): a window is counted
  -- up to the group's latest arrival, and only the latest arrival may say the group dropped
  -- below it, so a late joiner neither fires a crossing again nor takes it away.
  local now = t
  if last and last > t then now = last end
  local crossed = {}
  for _, window in ipairs(windows) do
    local atLeast, within = window[1], window[2]
    local count = 1
    if not alone then count = redis.call('ZCOUNT', members, '(' .. (now - within), now) end
    local marker = base .. 'crossed:' .. group .. ':' .. atLeast .. ':' .. within
    if count >= atLeast then
      if redis.call('SET', marker, '1', 'NX', 'PX', within) then
        crossed[#crossed + 1] = string.format('%d:%d', atLeast, within)
      else
        redis.call('PEXPIRE', marker, within)
      end
    elseif t >= now then
      redis.call('DEL', marker)
    end
  end

  local entryField, groupField = lineIdFields(entry, group)
  local value = table.concat({
    entryField,
    groupField,
    alone and 1 or redis.call('ZCARD', members),
    string.format('%d', entryMs(entry) - t),
    table.concat(crossed, ','),
    matches,
    first,
  }, '|')
  redis.call('HSET', of, field, value)
  return value
end

local stored = {}
for at = 4, #ARGV, 9 do
  stored[#stored + 1] = join(
    ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4],
    ARGV[at + 5], ARGV[at + 6], ARGV[at + 7], ARGV[at + 8]
  )
end
return stored
